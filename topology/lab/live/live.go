// Package live changes a running lab in ways its file does not record:
// an interface's impairment set or cleared, a link taken down or brought
// up (with the file's routes through it put back), as a pulled cable
// would. The kernel holds the changes (inspect reads them back); destroy
// removes them with the lab. It works through each node's netlink handle
// (see Lab), from any goroutine, and opens nothing by name.
package live

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Lab is a running lab as live changes it: its file, and in each node a
// netlink handle and the links it has (topology/lab's Running).
type Lab interface {
	File() *spec.Lab
	Handle(node string) *netlink.Handle
	Link(ep spec.Endpoint) (netlink.Link, error)
	// Do runs a function on a thread in node's namespace.
	Do(node string, fn func() error) error
}

// labLink is labInterface and the kernel's interface ep names, found
// through the node's handle.
func labLink(r Lab, ep spec.Endpoint) (*spec.Interface, netlink.Link, error) {
	i, err := labInterface(r, ep)
	if err != nil {
		return nil, nil, err
	}
	link, err := r.Link(ep)
	return i, link, err
}

// labInterface checks that ep is an interface of the lab a user may
// change (not lo) and returns it.
func labInterface(r Lab, ep spec.Endpoint) (*spec.Interface, error) {
	n := r.File().Node(ep.Node)
	if n == nil {
		return nil, fmt.Errorf("lab %s has no node %s", r.File().Name, ep.Node)
	}
	i := n.Interface(ep.Interface)
	if i == nil || i.Kind == spec.KindLoopback {
		var names []string
		for _, x := range n.Interfaces {
			if x.Kind != spec.KindLoopback {
				names = append(names, x.Name)
			}
		}
		return nil, fmt.Errorf("%s is not a lab interface of node %s (it has %v)", ep, ep.Node, names)
	}
	return i, nil
}

// Impair makes m the impairment of interface ep, replacing any it had.
// Where the kernel lacks the qdisc, the error (a *qdisc.MissingError) says
// what was measured, and the interface keeps what it had.
//
// Equivalent to: tc -n NS qdisc replace dev IF root handle 1: netem|tbf ...
func Impair(r Lab, ep spec.Endpoint, m *spec.Impair) error {
	i, link, err := labLink(r, ep)
	if err != nil {
		return err
	}
	// The file's queue under it stays (its qdisc:).
	in := func(fn func() error) error { return r.Do(ep.Node, fn) }
	if err := qdisc.SetTree(in, r.Handle(ep.Node), link, m, i.Queue); err != nil {
		return fmt.Errorf("impair %s: %w", ep, err)
	}
	return nil
}

// ClearImpair removes interface ep's impairment and reports whether it had
// one; the file's queue (qdisc:) stays, as the interface's root.
//
// Equivalent to: tc -n NS qdisc del dev IF root (then the queue's tc line)
func ClearImpair(r Lab, ep spec.Endpoint) (bool, error) {
	i, link, err := labLink(r, ep)
	if err != nil {
		return false, err
	}
	st, err := qdisc.Read(r.Handle(ep.Node), link)
	if err != nil || st == nil || st.Impair == nil {
		return false, err // no impairment: its queue, if any, stays
	}
	if i.Queue != nil { // the file's queue stays, as the root
		return true, qdisc.SetTree(func(fn func() error) error { return r.Do(ep.Node, fn) }, r.Handle(ep.Node), link, nil, i.Queue)
	}
	return qdisc.Clear(r.Handle(ep.Node), link)
}

// Impairment reads interface ep's root qdisc from the kernel (nil: none).
func Impairment(r Lab, ep spec.Endpoint) (*qdisc.State, error) {
	link, err := r.Link(ep)
	if err != nil {
		return nil, err
	}
	return qdisc.Read(r.Handle(ep.Node), link)
}

// SetLink takes interface ep administratively down or brings it up: the
// link fails or comes back as a pulled cable would (its peer's carrier goes
// too). Addresses stay (IPv6 ones too: labs keep them on down); the kernel
// removes the static routes through a downed interface, so bringing it up
// puts the file's routes through it back.
//
// Equivalent to: ip -n NS link set dev IF down|up [; ip -n NS route replace ...]
func SetLink(r Lab, ep spec.Endpoint, up bool) error {
	i, link, err := labLink(r, ep)
	if err != nil {
		return err
	}
	h := r.Handle(ep.Node)
	if !up {
		if err := h.LinkSetDown(link); err != nil {
			return fmt.Errorf("set %s down: %w", ep, err)
		}
		return nil
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", ep, err)
	}
	// Back when both ends are operationally up: until then the kernel
	// still drops what is sent on the link. The end of a link to another
	// host is a VXLAN device, which has no carrier (its state stays
	// "unknown"), and the peer is that host's.
	ends := []spec.Endpoint{ep}
	if i.Peer.Node != "" && r.File().Elsewhere(i.Peer.Node) == "" {
		ends = append(ends, i.Peer)
	}
	for _, e := range ends {
		l, err := r.Link(e)
		if err != nil {
			return err
		}
		if l.Type() == "vxlan" {
			continue
		}
		if err := WaitOperUp(r.Handle(e.Node), l.Attrs().Index, PortUpTimeout); err != nil {
			return fmt.Errorf("%s is up, but %s: %w", ep, e, err)
		}
	}
	for _, rt := range r.File().Node(ep.Node).Routes {
		if !routeUses(rt, i) {
			continue
		}
		if err := h.RouteReplace(Route(rt, link.Attrs().Index)); err != nil {
			return fmt.Errorf("%s is up, but its route %s could not be put back: %w", ep, rt, err)
		}
	}
	return nil
}

// routeUses reports whether route rt goes out through interface i: it names
// i, or its gateway is on one of i's subnets.
func routeUses(rt *spec.Route, i *spec.Interface) bool {
	if rt.Dev != "" {
		return rt.Dev == i.Name
	}
	for _, p := range i.Addresses {
		if rt.Via.IsValid() && p.Masked().Contains(rt.Via) {
			return true
		}
	}
	return false
}

// PortUpTimeout bounds the wait for a bridge port to be operationally up.
const PortUpTimeout = 3 * time.Second

// WaitOperUp polls a link until its operational state is up.
func WaitOperUp(h *netlink.Handle, index int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l, err := h.LinkByIndex(index)
		if err != nil {
			return err
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still %s after %s (is its peer up?)", l.Attrs().OperState, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// Route is route r as netlink takes it; devIndex is the ifindex of
// r.Dev (unused without one).
func Route(r *spec.Route, devIndex int) *netlink.Route {
	route := &netlink.Route{Dst: IPNet(r.To), Priority: r.Metric, Table: r.Table}
	if r.Via.IsValid() {
		route.Gw = net.IP(r.Via.AsSlice())
	} else {
		route.Scope = netlink.SCOPE_LINK // on-link, as ip route add gives it
	}
	if r.Dev != "" {
		route.LinkIndex = devIndex
	}
	return route
}

// IPNet is prefix p as netlink takes it.
func IPNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}
