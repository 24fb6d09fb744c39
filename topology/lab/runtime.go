package lab

import (
	"fmt"

	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// Changes to a running lab that the file does not record: impairments set
// or cleared and links taken down or up while it runs. The kernel holds
// them (inspect reads them back); destroy removes them with the lab.

// labInterface checks that ep is an interface of the lab a user may
// change (not lo) and returns it.
func (r *Running) labInterface(ep spec.Endpoint) (*spec.Interface, error) {
	n := r.Lab.Node(ep.Node)
	if n == nil {
		return nil, fmt.Errorf("lab %s has no node %s", r.Lab.Name, ep.Node)
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
func (r *Running) Impair(ep spec.Endpoint, m *spec.Impair) error {
	if _, err := r.labInterface(ep); err != nil {
		return err
	}
	link, err := r.Link(ep)
	if err != nil {
		return err
	}
	if err := qdisc.Set(r.nodes[ep.Node].Handle, link, m); err != nil {
		return fmt.Errorf("impair %s: %w", ep, err)
	}
	return nil
}

// ClearImpair removes interface ep's impairment and reports whether it had
// one.
//
// Equivalent to: tc -n NS qdisc del dev IF root
func (r *Running) ClearImpair(ep spec.Endpoint) (bool, error) {
	if _, err := r.labInterface(ep); err != nil {
		return false, err
	}
	link, err := r.Link(ep)
	if err != nil {
		return false, err
	}
	return qdisc.Clear(r.nodes[ep.Node].Handle, link)
}

// Impairment reads interface ep's root qdisc from the kernel (nil: none).
func (r *Running) Impairment(ep spec.Endpoint) (*qdisc.State, error) {
	link, err := r.Link(ep)
	if err != nil {
		return nil, err
	}
	return qdisc.Read(r.nodes[ep.Node].Handle, link)
}

// SetLink takes interface ep administratively down or brings it up: the
// link fails or comes back as a pulled cable would (its peer's carrier goes
// too). Addresses stay (IPv6 ones too: labs keep them on down); the kernel
// removes the static routes through a downed interface, so bringing it up
// puts the file's routes through it back.
//
// Equivalent to: ip -n NS link set dev IF down|up [; ip -n NS route replace ...]
func (r *Running) SetLink(ep spec.Endpoint, up bool) error {
	i, err := r.labInterface(ep)
	if err != nil {
		return err
	}
	link, err := r.Link(ep)
	if err != nil {
		return err
	}
	h := r.nodes[ep.Node].Handle
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
	// still drops what is sent on the link.
	ends := []spec.Endpoint{ep}
	if i.Peer.Node != "" {
		ends = append(ends, i.Peer)
	}
	for _, e := range ends {
		l, err := r.Link(e)
		if err != nil {
			return err
		}
		if err := waitOperUp(r.nodes[e.Node].Handle, l.Attrs().Index, portUpTimeout); err != nil {
			return fmt.Errorf("%s is up, but %s: %w", ep, e, err)
		}
	}
	for _, rt := range r.Lab.Node(ep.Node).Routes {
		if !routeUses(rt, i) {
			continue
		}
		if err := h.RouteReplace(netlinkRoute(rt, link.Attrs().Index)); err != nil {
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
