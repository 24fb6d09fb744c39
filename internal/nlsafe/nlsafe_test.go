package nlsafe_test

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// Sizes of the stable tables: large enough that a dump of each takes
// several netlink messages, so a change between two of them interrupts it.
const (
	stableVeths  = 150 // 300 links
	stableRoutes = 1500
	stableAddrs  = 2000 // on st0a
	reads        = 100
)

// churn adds and deletes a veth pair and a route in h's namespace in a
// loop until stop is closed, and counts its changes.
func churn(t *testing.T, h *netlink.Handle, lo netlink.Link, stop <-chan struct{}, changes *atomic.Int64) {
	dst := &net.IPNet{IP: net.IPv4(10, 255, 255, 0), Mask: net.CIDRMask(24, 32)}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "churn0"}, PeerName: "churn1"}
		if err := h.LinkAdd(v); err != nil {
			t.Errorf("churn: add veth: %v", err)
			return
		}
		for range 20 { // address and route changes are cheap; a veth's costs an RCU wait
			r := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}
			a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 254, 0, 1), Mask: net.CIDRMask(32, 32)}}
			if err := errors.Join(h.RouteAdd(r), h.AddrAdd(lo, a), h.RouteDel(r), h.AddrDel(lo, a)); err != nil {
				t.Errorf("churn: %v", err)
				return
			}
			changes.Add(4)
		}
		if err := h.LinkDel(v); err != nil {
			t.Errorf("churn: delete veth: %v", err)
			return
		}
		changes.Add(2)
	}
}

// stableTables fills h's namespace with stableVeths veth pairs and
// stableRoutes routes on lo, which the test never changes.
func stableTables(t *testing.T, h *netlink.Handle) netlink.Link {
	t.Helper()
	for i := range stableVeths {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("st%da", i)}, PeerName: fmt.Sprintf("st%db", i)}
		if err := h.LinkAdd(v); err != nil {
			t.Fatal(err)
		}
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	st0, err := h.LinkByName("st0a")
	if err != nil {
		t.Fatal(err)
	}
	for i := range stableAddrs {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(172, 16, byte(i>>8), byte(i)), Mask: net.CIDRMask(32, 32)}}
		if err := h.AddrAdd(st0, a); err != nil {
			t.Fatal(err)
		}
	}
	for i := range stableRoutes {
		dst := &net.IPNet{IP: net.IPv4(10, byte(i>>8), byte(i), 0), Mask: net.CIDRMask(24, 32)}
		if err := h.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}); err != nil {
			t.Fatal(err)
		}
	}
	return lo
}

// TestPrivilegedInterruptedDumps provokes interrupted dumps (another
// goroutine adds and deletes a veth pair and a route in the same
// namespace, in a loop) and checks that the wrappers never fail and never
// return a short table, while the raw calls, in the same conditions, are
// seen interrupted (else the test would prove nothing).
func TestPrivilegedInterruptedDumps(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	name := labtest.Namespace(t, ns.DefaultDir)
	h := labtest.Handle(t, ns.DefaultDir, name)
	lo := stableTables(t, h)
	stop := make(chan struct{})
	var changes atomic.Int64
	var wg sync.WaitGroup
	// A handle of its own: a handle's socket serves one request at a
	// time, so churn through h would wait for every dump to end.
	other := labtest.Handle(t, ns.DefaultDir, name)
	wg.Go(func() { churn(t, other, lo, stop, &changes) })
	defer func() { close(stop); wg.Wait() }()

	raw := map[string]int{} // interrupted raw dumps, by table
	for range reads {
		if _, err := h.LinkList(); errors.Is(err, netlink.ErrDumpInterrupted) {
			raw["links"]++
		}
		if _, err := h.RouteList(nil, netlink.FAMILY_V4); errors.Is(err, netlink.ErrDumpInterrupted) {
			raw["routes"]++
		}
		if _, err := h.AddrList(nil, netlink.FAMILY_V4); errors.Is(err, netlink.ErrDumpInterrupted) {
			raw["addresses"]++
		}
		links, err := nlsafe.LinkList(h)
		if err != nil {
			t.Fatalf("nlsafe.LinkList: %v", err)
		}
		if n := countPrefix(links, "st"); n != 2*stableVeths {
			t.Fatalf("nlsafe.LinkList: %d stable links, want %d", n, 2*stableVeths)
		}
		routes, err := nlsafe.RouteListFiltered(h, netlink.FAMILY_V4, &netlink.Route{LinkIndex: lo.Attrs().Index}, netlink.RT_FILTER_OIF)
		if err != nil {
			t.Fatalf("nlsafe.RouteListFiltered: %v", err)
		}
		if n := countStableRoutes(routes); n != stableRoutes {
			t.Fatalf("nlsafe.RouteListFiltered: %d stable routes, want %d", n, stableRoutes)
		}
		addrs, err := nlsafe.AddrList(h, nil, netlink.FAMILY_ALL)
		if err != nil {
			t.Fatalf("nlsafe.AddrList: %v", err)
		}
		if n := countStableAddrs(addrs); n != stableAddrs {
			t.Fatalf("nlsafe.AddrList: %d stable addresses, want %d", n, stableAddrs)
		}
		if _, err := nlsafe.QdiscList(h, nil); err != nil {
			t.Fatalf("nlsafe.QdiscList: %v", err)
		}
	}
	t.Logf("%d changes during the reads; raw dumps interrupted, of %d each: %v", changes.Load(), reads, raw)
	if len(raw) == 0 {
		t.Fatalf("no raw dump was interrupted: the churn provoked nothing, so the wrappers were not tested")
	}
}

func countPrefix(links []netlink.Link, prefix string) int {
	n := 0
	for _, l := range links {
		if len(l.Attrs().Name) > len(prefix) && l.Attrs().Name[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// countStableRoutes counts the routes of stableTables (10.x.y.0/24 with x
// below 255).
func countStableRoutes(routes []netlink.Route) int {
	n := 0
	for _, r := range routes {
		if r.Dst != nil && r.Dst.IP.To4() != nil && r.Dst.IP.To4()[0] == 10 && r.Dst.IP.To4()[1] != 255 {
			n++
		}
	}
	return n
}

// countStableAddrs counts the addresses of stableTables (172.16.x.y).
func countStableAddrs(addrs []netlink.Addr) int {
	n := 0
	for _, a := range addrs {
		if ip := a.IP.To4(); ip != nil && ip[0] == 172 && ip[1] == 16 {
			n++
		}
	}
	return n
}
