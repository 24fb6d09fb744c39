package ns

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// TestPrivilegedSettle releases 200 namespaces, each holding one end of a
// veth whose other end is in a namespace the test keeps: once Settle
// returns, the kernel must have removed every one of those ends.
func TestPrivilegedSettle(t *testing.T) {
	skipUnlessRoot(t)
	keep, err := unnamed()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keep.Close() })
	h, err := keep.NetlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	const n = 200
	for i := range n {
		x, err := unnamed()
		if err != nil {
			t.Fatal(err)
		}
		err = h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("k%d", i)}, PeerName: "x", PeerNamespace: netlink.NsFd(x.Fd())})
		x.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Settle(ctx); err != nil {
		t.Fatal(err)
	}
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if l.Type() == "veth" {
			t.Errorf("%s is still there after Settle: its peer's namespace was not torn down", l.Attrs().Name)
		}
	}
}
