//go:build vmtest

package auto

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/engine"
)

// TestVMAutoPicksPktgen: on a kernel with pktgen, auto runs the kernel
// engine and says why.
func TestVMAutoPicksPktgen(t *testing.T) {
	n := labtest.OpenNamespace(t, labtest.NetnsDir(t))
	name := n.Name
	job := engine.Job{Sender: n, Interface: "lo", Count: 10, Frame: 64,
		DstIP: netip.MustParseAddr("127.0.0.1"), DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}}
	res, err := Engine{}.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != "kernel pktgen" || !strings.Contains(res.Reason, "available in "+name) || res.Sent != 10 {
		t.Fatalf("result %+v", res)
	}
}
