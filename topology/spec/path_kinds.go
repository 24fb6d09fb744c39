package spec

import (
	"net/netip"
	"slices"
)

// What the packet walk needs to know of made interfaces (see Kind): which
// wires their frames leave on, with which VLAN tag, and which VRF's table
// an interface's packets are routed in.

// wireEnds returns the veth ends (or VFs) the frames node n sends out of
// interface or bridge name leave on: a bridge's ports, a macvlan's or
// VLAN's parent's wire, a bond's ports' wires (a bond sends on one of them
// at a time; the walk takes the first that reaches the next hop).
func (n *Node) wireEnds(name string) []string {
	if b := n.Bridge(name); b != nil {
		return b.Ports
	}
	i := n.Interface(name)
	if i == nil {
		return nil
	}
	switch i.Kind {
	case KindVeth, KindVF:
		return []string{name}
	case KindMacvlan, KindVLAN, KindBond:
		var out []string
		for _, lo := range i.Lower() {
			out = append(out, n.wireEnds(lo)...)
		}
		return out
	case KindLoopback, KindVRF:
	}
	return nil
}

// tagOf is the 802.1Q tag of frames sent out of interface name of node n:
// the ID of the VLAN it is or is made over, 0 for none.
func (n *Node) tagOf(name string) int {
	i := n.Interface(name)
	if i == nil {
		return 0
	}
	switch i.Kind {
	case KindVLAN:
		return i.VLAN.ID
	case KindMacvlan:
		return n.tagOf(i.Macvlan.Parent)
	case KindVeth, KindVF, KindLoopback, KindBond, KindVRF:
	}
	return 0
}

// landsOn reports whether a frame with VLAN tag tag, arriving at veth end
// peer, reaches interface want of the same node: a macvlan, VLAN or bond
// made over peer's wire with that tag.
func (l *Lab) landsOn(peer, want Endpoint, tag int) bool {
	if peer.Node != want.Node {
		return false
	}
	n := l.Node(want.Node)
	i := n.Interface(want.Interface)
	if i == nil || !i.Kind.Made() || i.Kind == KindVRF {
		return false
	}
	return n.tagOf(want.Interface) == tag && slices.Contains(n.wireEnds(want.Interface), peer.Interface)
}

// vrfOf returns the VRF interface name is a port of in node n, or nil.
func (n *Node) vrfOf(name string) *Interface {
	for _, i := range n.Interfaces {
		if i.Kind == KindVRF && slices.Contains(i.VRF.Ports, name) {
			return i
		}
	}
	return nil
}

// connectedIn reports whether the subnets of interface i are routes of
// table t: the table of its VRF, or main for one in no VRF.
func (n *Node) connectedIn(i string, t int) bool {
	if v := n.vrfOf(i); v != nil {
		return v.VRF.Table == t
	}
	return t == TableMain
}

// subnet is a connected subnet of a node and the interface it is on.
type subnet struct {
	netip.Prefix
	Dev string
}

// connected returns node n's connected subnets that are routes of table
// t (see connectedIn): those of its interfaces but lo, and of its bridges.
func (n *Node) connected(t int) []subnet {
	var out []subnet
	for _, i := range n.Interfaces {
		for _, a := range i.Addresses {
			if i.Kind != KindLoopback && n.connectedIn(i.Name, t) {
				out = append(out, subnet{a, i.Name})
			}
		}
	}
	for _, b := range n.Bridges {
		for _, a := range b.Addresses {
			if n.connectedIn(b.Name, t) {
				out = append(out, subnet{a, b.Name})
			}
		}
	}
	return out
}

// crossBridge reports whether a frame tagged tag (0: untagged) that
// enters bridge b of node pn by port in reaches want: the bridge itself
// (q is ""), or the interface on the wire of another port q. A
// VLAN-filtering bridge forwards it only in its VLAN (an untagged frame's
// is the port's PVID) to ports of that VLAN, untagged out of the port whose
// PVID it is and tagged out of the others.
func (l *Lab) crossBridge(pn *Node, b *Bridge, in string, tag int, want Endpoint) (q string, ok bool) {
	vid := 0
	if b.VLANFiltering {
		pv := b.PortVLAN(in)
		vid = tag
		if tag == 0 {
			vid = pv.PVID
		}
		if vid == 0 || !pv.Member(vid) {
			return "", false
		}
	} else if tag != 0 {
		vid = tag // a plain bridge carries the tag through
	}
	if (Endpoint{pn.Name, b.Name}) == want {
		return "", vid == 0 || (b.VLANFiltering && vid == defaultPVID)
	}
	for _, q := range b.Ports {
		if q == in {
			continue
		}
		out := vid
		if b.VLANFiltering {
			qv := b.PortVLAN(q)
			if !qv.Member(vid) {
				continue
			}
			if qv.PVID == vid {
				out = 0
			}
		}
		peer := pn.Interface(q).Peer
		if (peer == want && out == 0) || l.landsOn(peer, want, out) {
			return q, true
		}
	}
	return "", false
}
