package pktgen

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/labtest"
)

// TestPrivilegedNoPktgenOnThisKernel runs the kernel engine for real in a
// fresh namespace of a kernel without pktgen (our machines'): the module
// load is tried and the error says what the kernel lacks. On a kernel with
// pktgen it is skipped (the VM tests cover that case).
func TestPrivilegedNoPktgenOnThisKernel(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if _, err := os.Stat("/proc/net/pktgen"); err == nil {
		t.Skip("this kernel has pktgen")
	}
	dir := t.TempDir()
	name := labtest.Namespace(t, dir)
	job := engine.Job{NetnsDir: dir, Namespace: name, Interface: "lo", Count: 1, Frame: 64,
		DstIP: netip.MustParseAddr("127.0.0.1"), DstMAC: mac("02:00:00:00:00:01")}
	_, err := KernelEngine{}.Run(context.Background(), job)
	if !errors.Is(err, ErrNoPktgen) || !strings.Contains(err.Error(), "CONFIG_NET_PKTGEN") || !strings.Contains(err.Error(), name) {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
}
