package auto

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/kernel"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/ns"
)

// TestPrivilegedAutoPicksUserspaceWithoutPktgen runs on a kernel without
// pktgen (ours): auto selects the userspace engine, says why with the
// probe's own diagnosis, and the run happens. (The VM tests run the
// kernel engine.)
func TestPrivilegedAutoPicksUserspaceWithoutPktgen(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if _, err := os.Stat("/proc/net/pktgen"); err == nil {
		t.Skip("this kernel has pktgen")
	}
	n := labtest.OpenNamespace(t, labtest.NetnsDir(t))
	var measured *kernel.MissingError
	if err := kernel.Available(n); !errors.As(err, &measured) {
		t.Fatalf("probe: %v", err)
	}
	job := engine.Job{Sender: n, Interface: "lo", Count: 10, Frame: 64,
		DstIP: netip.MustParseAddr("127.0.0.1"), DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}}
	res, err := Engine{}.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != userspace.Name || !strings.Contains(res.Reason, measured.Short()) || res.Sent != 10 {
		t.Fatalf("result %+v; the probe said %q", res, measured.Short())
	}
}

// TestReasonIsTheProbes: whatever the probe finds is what the reason
// says; a diagnosis that did not come from the probe fails this test.
func TestReasonIsTheProbes(t *testing.T) {
	sender := &ns.NS{Name: "ns1"}
	for _, probeErr := range []error{
		&kernel.MissingError{Namespace: "ns1", Config: "CONFIG_NET_PKTGEN=m", LoadErr: errors.New("load pktgen.ko: key was rejected by service")},
		&kernel.MissingError{Namespace: "ns1", Config: "# CONFIG_NET_PKTGEN is not set", LoadErr: errors.New("no pktgen module at /x")},
	} {
		c := Chooser{Probe: func(*ns.NS) error { return probeErr }}
		eng, reason, err := c.Choose("auto", sender)
		if err != nil || eng.Name() != userspace.Name {
			t.Fatalf("choose: %v %v", eng, err)
		}
		var m *kernel.MissingError
		errors.As(probeErr, &m)
		if !strings.Contains(reason, m.Config) || !strings.Contains(reason, m.LoadErr.Error()) || !strings.Contains(reason, "ns1") {
			t.Errorf("reason %q lost the probe's diagnosis %q", reason, m.Short())
		}
	}
	c := Chooser{Probe: func(*ns.NS) error { return nil }}
	if eng, reason, _ := c.Choose("auto", sender); eng.Name() != kernel.Name || !strings.Contains(reason, "available in ns1") {
		t.Errorf("with pktgen: %s, %q", eng.Name(), reason)
	}
	if _, _, err := (Chooser{Probe: func(*ns.NS) error { return errors.New("enter namespace ns1: bad file descriptor") }}).Choose("auto", sender); err == nil {
		t.Error("a probe that failed for another reason was taken as no pktgen")
	}
	if _, _, err := (Chooser{}).Choose("dpdk", sender); err == nil {
		t.Error("unknown engine accepted")
	}
}
