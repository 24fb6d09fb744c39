package verify

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/probe"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// reach sends echoes from the test's node (from its interface's address
// when FROM names one) to TO, and compares with what the test expects.
func (c *Checker) reach(t *spec.Test) (result, error) {
	x := t.Reach
	n := c.Run.Node(x.From)
	if n == nil {
		return result{}, fmt.Errorf("node %s is not deployed on this host", x.From)
	}
	dst, err := c.target(x.To)
	if err != nil {
		return result{}, err
	}
	var src netip.Addr
	if x.Source != "" {
		if src, err = firstAddr(n.Handle, x.Source, dst.Is6()); err != nil {
			return result{}, err
		}
	}
	res, err := probe.EchoFrom(n.NS, src, dst, 2, time.Second, false)
	if err != nil {
		return result{}, err
	}
	measured := fmt.Sprintf("no answer to %d echoes to %s", res.Sent, dst)
	switch {
	case res.Err != nil:
		measured = fmt.Sprintf("echo to %s not sent: %v", dst, res.Err)
	case res.OK():
		measured = fmt.Sprintf("%s answered in %.2fms", dst, float64(res.RTT.Microseconds())/1000)
	}
	return result{pass: res.OK() == x.Reach, measured: measured}, nil
}

// target is TO as an address: itself, a prefix's first address, or the
// file's first address of a node or node:interface.
func (c *Checker) target(to string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(to); err == nil {
		return a, nil
	}
	if p, err := netip.ParsePrefix(to); err == nil {
		return p.Masked().Addr().Next(), nil
	}
	ep, err := spec.ParseEndpoint(to)
	if err != nil {
		return netip.Addr{}, err
	}
	n := c.Run.Lab.Model().Node(ep.Node)
	for _, i := range n.Interfaces {
		if (ep.Interface == "" || i.Name == ep.Interface) && len(i.Addresses) > 0 {
			return i.Addresses[0].Addr(), nil
		}
	}
	// Addresses set by exec: lines or daemons: the kernel's.
	if rn := c.Run.Node(ep.Node); rn != nil && ep.Interface != "" {
		return firstAddr(rn.Handle, ep.Interface, false)
	}
	return netip.Addr{}, fmt.Errorf("%s has no address in the file to send to: name an address, or node:interface", to)
}

// firstAddr is the first address of interface name of the family.
func firstAddr(h *netlink.Handle, name string, v6 bool) (netip.Addr, error) {
	l, err := nlsafe.LinkByName(h, name)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: %w", name, err)
	}
	addrs, err := nlsafe.AddrList(h, l, family(v6))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: %w", name, err)
	}
	for _, x := range addrs {
		if a, _ := netip.AddrFromSlice(x.IP); !a.Unmap().IsLoopback() && !a.IsLinkLocalUnicast() {
			return a.Unmap(), nil // lo's 192.0.2.1, not its 127.0.0.1
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no address but loopback and link-local ones", name)
}

func family(v6 bool) int {
	if v6 {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

// route looks the test's prefix up in the node's table, as ip route
// show table T exact PREFIX does, and checks its next hop, interface and
// protocol.
func (c *Checker) route(t *spec.Test) (result, error) {
	n := c.Run.Node(t.Node)
	if n == nil {
		return result{}, fmt.Errorf("node %s is not deployed on this host", t.Node)
	}
	table := t.Table
	if table == 0 {
		table = unix.RT_TABLE_MAIN
	}
	routes, err := nlsafe.RouteListFiltered(n.Handle, family(t.Prefix.Addr().Is6()), &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return result{}, fmt.Errorf("list table %d of %s: %w", table, t.Node, err)
	}
	var found []string
	for _, r := range routes {
		if routeDst(r) != t.Prefix {
			continue
		}
		d := describeRoute(n.Handle, r)
		found = append(found, d)
		if (!t.Via.IsValid() || slices.Contains(gateways(r), t.Via)) && (t.Dev == "" || strings.Contains(d, " dev "+t.Dev+" ") || strings.HasSuffix(d, " dev "+t.Dev)) &&
			(t.Protocol == "" || r.Protocol.String() == t.Protocol) {
			return result{pass: true, measured: d}, nil
		}
	}
	if len(found) == 0 {
		return result{measured: fmt.Sprintf("no route to %s in table %s", t.Prefix, tableName(table))}, nil
	}
	return result{measured: strings.Join(found, "; ")}, nil
}

func tableName(t int) string {
	if t == unix.RT_TABLE_MAIN {
		return "main"
	}
	return fmt.Sprint(t)
}

// routeDst is a route's destination (0.0.0.0/0 or ::/0 for a default).
func routeDst(r netlink.Route) netip.Prefix {
	if r.Dst == nil {
		if r.Family == netlink.FAMILY_V6 {
			return netip.MustParsePrefix("::/0")
		}
		return netip.MustParsePrefix("0.0.0.0/0")
	}
	a, _ := netip.AddrFromSlice(r.Dst.IP)
	ones, _ := r.Dst.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones)
}

// gateways are a route's next hops.
func gateways(r netlink.Route) []netip.Addr {
	var out []netip.Addr
	add := func(ip net.IP) {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	add(r.Gw)
	for _, nh := range r.MultiPath {
		add(nh.Gw)
	}
	return out
}

// describeRoute writes a route as ip route does.
func describeRoute(h *netlink.Handle, r netlink.Route) string {
	s := routeDst(r).String()
	for _, g := range gateways(r) {
		s += " via " + g.String()
	}
	if l, err := h.LinkByIndex(r.LinkIndex); err == nil { // one request, no dump
		s += " dev " + l.Attrs().Name
	}
	return s + " proto " + r.Protocol.String()
}

// address checks that the interface holds the address.
func (c *Checker) address(t *spec.Test) (result, error) {
	n := c.Run.Node(t.Node)
	if n == nil {
		return result{}, fmt.Errorf("node %s is not deployed on this host", t.Node)
	}
	l, err := nlsafe.LinkByName(n.Handle, t.Dev)
	if err != nil {
		return result{measured: fmt.Sprintf("no interface %s in %s", t.Dev, t.Node)}, nil
	}
	addrs, err := nlsafe.AddrList(n.Handle, l, netlink.FAMILY_ALL)
	if err != nil {
		return result{}, err
	}
	var have []string
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		p := netip.PrefixFrom(ip.Unmap(), ones)
		if p == t.Prefix {
			return result{pass: true, measured: p.String()}, nil
		}
		have = append(have, p.String())
	}
	return result{measured: fmt.Sprintf("%s:%s has %s", t.Node, t.Dev, orNothing(have))}, nil
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "no address"
	}
	return strings.Join(s, ", ")
}

// neighbour checks that the node's kernel has resolved the address.
func (c *Checker) neighbour(t *spec.Test) (result, error) {
	n := c.Run.Node(t.Node)
	if n == nil {
		return result{}, fmt.Errorf("node %s is not deployed on this host", t.Node)
	}
	neighs, err := nlsafe.NeighList(n.Handle, family(t.Addr.Is6()))
	if err != nil {
		return result{}, err
	}
	const resolved = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP
	for _, nb := range neighs {
		if a, _ := netip.AddrFromSlice(nb.IP); a.Unmap() == t.Addr {
			state := neighState(nb.State)
			if nb.State&resolved != 0 && nb.HardwareAddr != nil {
				return result{pass: true, measured: fmt.Sprintf("%s lladdr %s %s", t.Addr, nb.HardwareAddr, state)}, nil
			}
			return result{measured: fmt.Sprintf("%s is %s", t.Addr, state)}, nil
		}
	}
	return result{measured: fmt.Sprintf("%s has no neighbour entry for %s", t.Node, t.Addr)}, nil
}

// neighState names a neighbour state as ip neigh does.
func neighState(s int) string {
	names := []struct {
		bit  int
		name string
	}{{netlink.NUD_INCOMPLETE, "incomplete"}, {netlink.NUD_REACHABLE, "reachable"}, {netlink.NUD_STALE, "stale"}, {netlink.NUD_DELAY, "delay"},
		{netlink.NUD_PROBE, "probe"}, {netlink.NUD_FAILED, "failed"}, {netlink.NUD_NOARP, "noarp"}, {netlink.NUD_PERMANENT, "permanent"}}
	var out []string
	for _, n := range names {
		if s&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}
