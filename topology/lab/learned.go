package lab

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/nlsafe"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Routes the daemons learned: a node that runs routing daemons has, in
// its kernel, routes the file does not. Learn reads them into the lab's
// model (spec.Node.Learned) so that the packet walk, and so nslab path
// and check, follow the routes the kernel forwards by.

// learnedProtocol reports whether a route of this protocol was installed
// by a daemon (not the kernel's connected routes, nor nslab's own static
// ones, which are RTPROT_BOOT as iproute2's).
func learnedProtocol(p netlink.RouteProtocol) bool {
	switch p {
	case unix.RTPROT_UNSPEC, unix.RTPROT_REDIRECT, unix.RTPROT_KERNEL, unix.RTPROT_BOOT, unix.RTPROT_STATIC:
		return false
	}
	return true
}

// Learn reads the routes the daemons of every local node that runs them
// installed, into the lab's model, replacing what an earlier Learn read.
// It runs in the caller's namespace (through each node's handle).
func (r *Running) Learn() error {
	for _, n := range r.Lab.Model().Nodes {
		node := r.nodes[n.Name]
		if !n.RunsRouting() || node == nil {
			continue
		}
		routes, err := learnedRoutes(node.Handle)
		if err != nil {
			return fmt.Errorf("read the routes of %s: %w", n.Name, err)
		}
		n.Learned = routes
	}
	return nil
}

// learnedRoutes lists the main table's routes a daemon installed, each
// path of a multipath route as a route of its own (the walk follows the
// first; the kernel hashes flows over them).
func learnedRoutes(h *netlink.Handle) ([]*spec.Route, error) {
	var out []*spec.Route
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := nlsafe.RouteListFiltered(h, family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return nil, err
		}
		for _, rt := range rs {
			if !learnedProtocol(rt.Protocol) || rt.Type != unix.RTN_UNICAST {
				continue
			}
			out = append(out, toSpecRoutes(h, rt)...)
		}
	}
	return out, nil
}

// toSpecRoutes is a kernel route in the file's terms.
func toSpecRoutes(h *netlink.Handle, rt netlink.Route) []*spec.Route {
	to := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	if rt.Family == netlink.FAMILY_V6 {
		to = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	if rt.Dst != nil {
		ones, _ := rt.Dst.Mask.Size()
		a, _ := netip.AddrFromSlice(rt.Dst.IP)
		to = netip.PrefixFrom(a.Unmap(), ones)
	}
	hops := []*netlink.NexthopInfo{{LinkIndex: rt.LinkIndex, Gw: rt.Gw}}
	if len(rt.MultiPath) > 0 {
		hops = rt.MultiPath
	}
	var out []*spec.Route
	for _, hop := range hops {
		sr := &spec.Route{To: to, Metric: rt.Priority}
		if hop.Gw != nil {
			gw, _ := netip.AddrFromSlice(hop.Gw)
			sr.Via = gw.Unmap()
		}
		if l, err := h.LinkByIndex(hop.LinkIndex); err == nil {
			sr.Dev = l.Attrs().Name
		}
		out = append(out, sr)
	}
	return out
}

// Tables is every local node's main routing table as text, one line per
// route, nodes in file order: two calls that return the same text saw the
// same routes.
func (r *Running) Tables() (string, error) {
	var b strings.Builder
	for _, n := range r.Lab.Nodes {
		node := r.nodes[n.Name]
		if node == nil {
			continue
		}
		var lines []string
		for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			rs, err := nlsafe.RouteListFiltered(node.Handle, family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
			if err != nil {
				return "", fmt.Errorf("read the routes of %s: %w", n.Name, err)
			}
			for _, rt := range rs {
				lines = append(lines, rt.String())
			}
		}
		slices.Sort(lines)
		fmt.Fprintf(&b, "%s\n%s\n", n.Name, strings.Join(lines, "\n"))
	}
	return b.String(), nil
}
