package kernel

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/engine"
)

// TestPrivilegedNoPktgenOnThisKernel runs the kernel engine for real in a
// fresh namespace of a kernel without pktgen (our machines'): the module
// load is tried, and the diagnosis is what this machine measures, read
// again here: the CONFIG_NET_PKTGEN line of /proc/config.gz, and why the
// module did not load. On a kernel with pktgen it is skipped (the VM tests
// cover that case).
func TestPrivilegedNoPktgenOnThisKernel(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if _, err := os.Stat("/proc/net/pktgen"); err == nil {
		t.Skip("this kernel has pktgen")
	}
	n := labtest.OpenNamespace(t, labtest.NetnsDir(t))
	job := engine.Job{Sender: n, Interface: "lo", Count: 1, Frame: 64,
		DstIP: netip.MustParseAddr("127.0.0.1"), DstMAC: mac("02:00:00:00:00:01")}
	_, err := Engine{}.Run(context.Background(), job)
	var missing *MissingError
	if !errors.As(err, &missing) || !errors.Is(err, ErrNoPktgen) {
		t.Fatalf("got %v", err)
	}
	if want := host.KernelConfig("CONFIG_NET_PKTGEN"); missing.Config != want || want == "" {
		t.Errorf("config line %q, /proc/config.gz says %q", missing.Config, want)
	}
	if missing.Namespace != n.Name || !strings.Contains(err.Error(), n.Name) {
		t.Errorf("namespace %q in %v", missing.Namespace, err)
	}
	if missing.LoadErr == nil || !strings.Contains(missing.Short(), missing.LoadErr.Error()) {
		t.Errorf("the load failure is not in the diagnosis %q (load error %v)", missing.Short(), missing.LoadErr)
	}
	t.Log(missing.Short())
}

// TestMissingShortSaysWhatWasMeasured: the short diagnosis follows the
// measured facts, whatever they are.
func TestMissingShortSaysWhatWasMeasured(t *testing.T) {
	cases := []struct {
		e    MissingError
		want []string
	}{
		{MissingError{Config: "# CONFIG_NET_PKTGEN is not set"}, []string{"built without it", "is not set"}},
		{MissingError{Config: "CONFIG_NET_PKTGEN=m", LoadErr: errors.New("load x: operation not permitted")}, []string{"has CONFIG_NET_PKTGEN=m", "operation not permitted"}},
		{MissingError{LoadErr: errors.New("no pktgen module at /lib/modules/x")}, []string{"configuration is unknown", "no pktgen module"}},
	}
	for _, c := range cases {
		got := c.e.Short()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: %q lacks %q", c.e, got, w)
			}
		}
	}
}
