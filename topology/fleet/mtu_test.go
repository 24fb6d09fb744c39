package fleet

import (
	"context"
	"net/netip"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/vishvananda/netlink"
)

// TestPrivilegedLargestAnswered: two namespaces joined by a veth whose
// far end's MTU is 1400 (its near end's 1500, as an underlay with a
// smaller hop is): asked for 1450 bytes, the probe finds the 1400 that
// are answered, over IPv4 (DF set) and over IPv6 (no fragment made); a
// size that fits is answered as asked. A veth lets through 4 bytes more
// than its MTU (room for a VLAN tag: is_skb_forwardable), so up to 1404.
func TestPrivilegedLargestAnswered(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	dir := labtest.NetnsDir(t)
	a, b := labtest.OpenNamespace(t, dir), labtest.OpenNamespace(t, dir)
	ha, hb := labtest.Handle(t, dir, a.Name), labtest.Handle(t, dir, b.Name)
	if err := ha.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "u0", MTU: 1500}, PeerName: "u1", PeerNamespace: netlink.NsFd(b.Fd())}); err != nil {
		t.Fatal(err)
	}
	for _, end := range []struct {
		h      *netlink.Handle
		name   string
		mtu    int
		v4, v6 string
	}{{ha, "u0", 1500, "192.0.2.1/24", "2001:db8::1/64"}, {hb, "u1", 1400, "192.0.2.2/24", "2001:db8::2/64"}} {
		link, err := end.h.LinkByName(end.name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{end.v4, end.v6} {
			addr, _ := netlink.ParseAddr(s)
			addr.Flags = 0x02 // IFA_F_NODAD: usable at once
			if err := end.h.AddrAdd(link, addr); err != nil {
				t.Fatal(err)
			}
		}
		if err := end.h.LinkSetMTU(link, end.mtu); err != nil {
			t.Fatal(err)
		}
		if err := end.h.LinkSetUp(link); err != nil {
			t.Fatal(err)
		}
	}
	for _, to := range []string{"192.0.2.2", "2001:db8::2"} {
		addr := netip.MustParseAddr(to)
		var largest, fits int
		err := a.Do(func() error {
			var err error
			if largest, err = LargestAnswered(context.Background(), addr, 1450); err != nil {
				return err
			}
			fits, err = LargestAnswered(context.Background(), addr, 1300)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", to, err)
		}
		if largest < 1400 || largest > 1404 || fits != 1300 {
			t.Errorf("%s: 1450 asked, %d answered (want 1400, or up to 4 more); 1300 asked, %d answered (want 1300)", to, largest, fits)
		}
	}
}
