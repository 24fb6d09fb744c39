package auto

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/labtest"
)

// TestPrivilegedAutoPicksUserspaceWithoutPktgen runs on a kernel without
// pktgen (ours): auto selects the userspace engine, says why, and the run
// happens. (The VM tests run the kernel engine.)
func TestPrivilegedAutoPicksUserspaceWithoutPktgen(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if _, err := os.Stat("/proc/net/pktgen"); err == nil {
		t.Skip("this kernel has pktgen")
	}
	dir := t.TempDir()
	name := labtest.Namespace(t, dir)
	job := engine.Job{NetnsDir: dir, Namespace: name, Interface: "lo", Count: 10, Frame: 64,
		DstIP: netip.MustParseAddr("127.0.0.1"), DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}}
	res, err := Engine{}.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != userspace.Name || !strings.Contains(res.Reason, "not available") || res.Sent != 10 {
		t.Fatalf("result %+v", res)
	}
}
