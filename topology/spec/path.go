package spec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
)

// Hop is one node on the path of a traffic run. At the sender In is empty,
// at the receiver Out is empty. L2 marks a switch node crossed through a
// bridge (In and Out are bridge ports).
type Hop struct {
	Node string `json:"node"`
	In   string `json:"in,omitempty"`
	Out  string `json:"out,omitempty"`
	L2   bool   `json:"l2,omitempty"`
	// At a hop that routes (Out set, not L2): the address it sends to (a
	// gateway, or the destination itself when on-link) and the interface
	// that holds it, whose MAC the frames carry.
	Via     netip.Addr `json:"via,omitzero"`
	Gateway bool       `json:"gateway,omitempty"` // Via is a gateway from a route
	Next    Endpoint   `json:"next,omitzero"`
	// NextMAC is Next's MAC, which the hop's frames carry: from the file
	// (declared or derived) until the kernel is asked. Nil where the file
	// cannot know it (a VF keeps the NIC's, a bridge the kernel's choice).
	NextMAC net.HardwareAddr `json:"-"`
	// DNAT is the destination the hop's dnat rule (DNATBy, its place in
	// the file) gives the packet as it arrives; SNAT the source its
	// masquerade or snat rule (SNATBy) gives it as it leaves.
	DNAT   netip.AddrPort `json:"dnat,omitzero"`
	DNATBy string         `json:"dnat_by,omitempty"`
	SNAT   netip.Addr     `json:"snat,omitzero"`
	SNATBy string         `json:"snat_by,omitempty"`
}

// MarshalJSON writes NextMAC as text (next_mac).
func (h Hop) MarshalJSON() ([]byte, error) {
	type plain Hop
	out := struct {
		plain
		NextMAC string `json:"next_mac,omitempty"`
	}{plain: plain(h)}
	if h.NextMAC != nil {
		out.NextMAC = h.NextMAC.String()
	}
	return json.Marshal(out)
}

// Path is the way packets from a sender interface to a destination address
// take through the lab, as the lab's own addresses and routes decide.
type Path struct {
	Hops []Hop `json:"hops"`
	// NextHop is the interface that receives the sender's frames at the IP
	// level: its MAC is the destination MAC the engine must use.
	NextHop Endpoint `json:"next_hop,omitzero"`
	// Dest is the interface (or bridge) that holds the destination
	// address; Local says the sender holds it itself (one hop, no wire).
	Dest  Endpoint `json:"dest"`
	Local bool     `json:"local,omitempty"`
}

// maxHops bounds a path, so a routing loop is an error, not a hang.
const maxHops = 64

// PathOf derives the path from a sender interface to an address from the
// lab's connected subnets, routes and links. It is pure: the next hop's MAC
// is read from the kernel by the caller.
func (l *Lab) PathOf(from Endpoint, to netip.Addr, f Flow) (*Path, error) {
	if n := l.Node(from.Node); n == nil || n.Interface(from.Interface) == nil {
		return nil, fmt.Errorf("%s is not an interface of the lab", from)
	}
	p, err := l.TraceFlow(from, to, f)
	if err != nil {
		return nil, err
	}
	if p.Local {
		return nil, fmt.Errorf("%s is an address of the sender %s itself", to, from.Node)
	}
	return p, nil
}

// Flow is what a traced packet is, for the NAT and firewall rules on its
// way: its protocol and destination port, and whether it answers a
// packet that went the other way (conntrack's established: no NAT rule
// applies to it, and the nodes that rewrote the request's source give it
// its destination back, listed in Restore by node).
type Flow struct {
	Proto   string // tcp, udp, icmp; "": an ICMP echo (icmpv6 for IPv6)
	Port    int    // destination port for tcp and udp
	Reply   bool
	Restore map[string]netip.Addr
}

// packet is the packet a flow starts as.
func (f Flow) packet(src, dst netip.Addr) Packet {
	p := Packet{Src: src, Dst: dst, Proto: f.Proto, Port: f.Port, State: "new"}
	if p.Proto == "" || p.Proto == "icmp" {
		p.Proto, p.Port = "icmp", 0
		if dst.Is6() {
			p.Proto = "icmpv6"
		}
	}
	if f.Reply {
		p.State = "established"
	}
	return p
}

// FilteredError says that a node's firewall drops the traced packet: by a
// rule, or by its policy (Rule is then the firewall's place in the file).
type FilteredError struct {
	Node  string
	Rule  string // place in the file
	Words string // the rule in nslab's words, or "policy drop"
}

func (e *FilteredError) Error() string {
	return fmt.Sprintf("node %s's firewall drops it (%s: %s)", e.Node, e.Rule, e.Words)
}

// Trace derives the path from a node to an address of the lab, as PathOf,
// for an ICMP echo (see TraceFlow).
func (l *Lab) Trace(from Endpoint, to netip.Addr) (*Path, error) {
	return l.TraceFlow(from, to, Flow{})
}

// TraceFlow derives the path a packet of flow f takes from a node to an
// address of the lab, through the nodes' routes, NAT and firewalls.
// from.Interface may be empty: the node's route lookup picks the egress.
// A destination the node holds itself gives a one-hop path marked Local.
// A firewall that drops the packet gives a *FilteredError.
func (l *Lab) TraceFlow(from Endpoint, to netip.Addr, f Flow) (*Path, error) {
	owner := l.addressOwners()
	dst, ok := owner[to]
	if !ok {
		return nil, fmt.Errorf("no interface of the lab has address %s: traffic must stay inside the lab", to)
	}
	n := l.Node(from.Node)
	if n == nil {
		return nil, fmt.Errorf("node %s is not in the lab", from.Node)
	}
	if from.Interface != "" && n.Interface(from.Interface) == nil && n.Bridge(from.Interface) == nil {
		return nil, fmt.Errorf("%s is not an interface of the lab", from)
	}
	if dst.Node == from.Node {
		return &Path{Hops: []Hop{{Node: from.Node, In: dst.Interface}}, Dest: dst, Local: true}, nil
	}
	gw, egress, err := l.lookup(n, netip.Addr{}, to, "")
	if err != nil {
		return nil, err
	}
	if from.Interface == "" {
		from.Interface = egress
	}
	if egress != from.Interface {
		return nil, fmt.Errorf("%s routes %s out of %s, not %s: send from %s:%s or fix the routes", from.Node, to, egress, from.Interface, from.Node, egress)
	}
	pkt := f.packet(l.SourceOf(from, to), to)
	pkt.Out = from.Interface
	p := &Path{Hops: []Hop{{Node: from.Node, Out: from.Interface}}, Dest: dst}
	if !f.Reply {
		l.sourceNAT(&p.Hops[0], n, &pkt)
	}
	if err := l.walk(p, from, gw, &pkt, f, owner); err != nil {
		return nil, err
	}
	return p, nil
}

// walk follows the path from the sender's egress hop by hop until the node
// that holds the destination, filling p. pkt is the packet as it is on
// the wire, rewritten by the NAT rules on the way.
func (l *Lab) walk(p *Path, at Endpoint, gw netip.Addr, pkt *Packet, f Flow, owner map[netip.Addr]Endpoint) error {
	for len(p.Hops) < maxHops {
		next, l2, err := l.resolve(at, gw, owner)
		if err != nil {
			return err
		}
		last := &p.Hops[len(p.Hops)-1]
		last.Via, last.Gateway, last.Next, last.NextMAC = gw, gw != pkt.Dst, next, l.macOf(next)
		p.Hops = append(p.Hops, l2...)
		if len(p.Hops) == 1+len(l2) {
			p.NextHop = next
		}
		hop := Hop{Node: next.Node, In: next.Interface}
		pkt.In = next.Interface
		l.arrive(p, &hop, pkt, f, owner)
		if next.Node == p.Dest.Node {
			p.Hops = append(p.Hops, hop)
			return nil
		}
		if gw, hop.Out, err = l.forward(p, next, pkt.Src, pkt.Dst); err != nil {
			return err
		}
		pkt.Out = hop.Out
		node := l.Node(next.Node)
		if err := filter(node, *pkt); err != nil {
			return err
		}
		if !f.Reply {
			l.sourceNAT(&hop, node, pkt)
		}
		p.Hops = append(p.Hops, hop)
		at = Endpoint{Node: next.Node, Interface: hop.Out}
	}
	return fmt.Errorf("the path to %s is longer than %d hops", pkt.Dst, maxHops)
}

// arrive applies what a node does to a packet as it arrives (prerouting):
// a dnat rule gives a new packet a new destination; a reply to a source
// the node rewrote gets its original destination back.
func (l *Lab) arrive(p *Path, hop *Hop, pkt *Packet, f Flow, owner map[netip.Addr]Endpoint) {
	n := l.Node(hop.Node)
	if f.Reply {
		if orig, ok := f.Restore[hop.Node]; ok && owner[pkt.Dst].Node == hop.Node {
			pkt.Dst, p.Dest = orig, owner[orig]
		}
		return
	}
	for _, r := range n.NAT {
		if r.Kind != NATDNAT || !r.Match.Matches(*pkt) {
			continue
		}
		pkt.Dst, p.Dest = r.To.Addr(), owner[r.To.Addr()]
		if r.To.Port() != 0 {
			pkt.Port = int(r.To.Port())
		}
		hop.DNAT, hop.DNATBy = r.To, r.Path
		return
	}
}

// filter is a forwarding node's firewall verdict on pkt: nil to pass.
func filter(n *Node, pkt Packet) error {
	fw := n.Firewall
	if fw == nil {
		return nil
	}
	for _, r := range fw.Rules {
		if r.Match.Matches(pkt) {
			if r.Verdict == Drop {
				return &FilteredError{Node: n.Name, Rule: r.Path, Words: r.String()}
			}
			return nil
		}
	}
	if fw.Policy == Drop {
		return &FilteredError{Node: n.Name, Rule: fw.Path, Words: "policy drop, and no rule accepts it"}
	}
	return nil
}

// sourceNAT applies a node's first matching masquerade or snat rule to a
// packet leaving it, recording the new source on the hop.
func (l *Lab) sourceNAT(hop *Hop, n *Node, pkt *Packet) {
	for _, r := range n.NAT {
		if !r.Source() || !r.Match.Matches(*pkt) {
			continue
		}
		src := r.To.Addr()
		if r.Kind == NATMasquerade {
			src = l.SourceOf(Endpoint{Node: n.Name, Interface: pkt.Out}, pkt.Dst)
		}
		pkt.Src, hop.SNAT, hop.SNATBy = src, src, r.Path
		return
	}
}

// Restore lists the nodes on the path that rewrote the source, with the
// source they replaced: a reply reaching such a node gets that address
// as its destination (see Flow).
func (p *Path) Restore(src netip.Addr) map[string]netip.Addr {
	out := map[string]netip.Addr{}
	for _, h := range p.Hops {
		if h.SNAT.IsValid() {
			out[h.Node] = src
			src = h.SNAT
		}
	}
	return out
}

// SourceAtDest is the source the packet carries when it arrives, from the
// sender's src after every rewrite on the way.
func (p *Path) SourceAtDest(src netip.Addr) netip.Addr {
	for _, h := range p.Hops {
		if h.SNAT.IsValid() {
			src = h.SNAT
		}
	}
	return src
}

// forward is a transit node's routing decision for to: its next hop and
// egress. The node must forward, and must not be on the path already.
func (l *Lab) forward(p *Path, at Endpoint, src, to netip.Addr) (netip.Addr, string, error) {
	node := l.Node(at.Node)
	if (to.Is4() && !node.Forwarding.IPv4) || (to.Is6() && !node.Forwarding.IPv6) {
		return netip.Addr{}, "", fmt.Errorf("the path to %s crosses node %s, which does not forward %s: set forwarding: true there", to, at.Node, family(to))
	}
	gw, egress, err := l.lookup(node, src, to, at.Interface)
	if err != nil {
		return netip.Addr{}, "", err
	}
	for _, h := range p.Hops {
		if h.Node == at.Node && !h.L2 {
			return netip.Addr{}, "", fmt.Errorf("routing loop: the path to %s comes back to %s", to, at.Node)
		}
	}
	return gw, egress, nil
}

// macOf is the MAC the file gives an interface or bridge, or nil.
func (l *Lab) macOf(ep Endpoint) net.HardwareAddr {
	n := l.Node(ep.Node)
	if i := n.Interface(ep.Interface); i != nil {
		return i.MAC
	}
	if b := n.Bridge(ep.Interface); b != nil {
		return b.MAC
	}
	return nil
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// addressOwners maps every address of the lab to its interface or bridge.
func (l *Lab) addressOwners() map[netip.Addr]Endpoint {
	m := map[netip.Addr]Endpoint{}
	for _, o := range l.Addresses() {
		m[o.Addr] = o.By
	}
	return m
}

// lookup does node n's route lookup for a packet from src (invalid: one
// the node sends itself, before it chose a source) to dst that arrived on
// iif ("": sent by the node): the tables its rules give, in order (see
// Node.tables), and in each the longest prefix first, connected subnets
// (main table) before routes of the same length, then lower metric. It
// returns the next hop's address (dst itself when on-link) and the egress.
func (l *Lab) lookup(n *Node, src, dst netip.Addr, iif string) (netip.Addr, string, error) {
	for _, t := range n.tables(src, dst, iif) {
		if gw, dev, ok := l.lookupTable(n, t, dst); ok {
			return gw, dev, nil
		}
	}
	return netip.Addr{}, "", fmt.Errorf("node %s has no route to %s: add one under nodes.%s.routes", n.Name, dst, n.Name)
}

// lookupTable is lookup in routing table t alone.
func (l *Lab) lookupTable(n *Node, t int, dst netip.Addr) (netip.Addr, string, bool) {
	bestBits, bestMetric, connected := -1, 0, false
	var gw netip.Addr
	var dev string
	consider := func(p netip.Prefix, isConnected bool, metric int, via netip.Addr, out string) {
		p = p.Masked()
		if !p.Contains(dst) {
			return
		}
		better := p.Bits() > bestBits ||
			(p.Bits() == bestBits && isConnected && !connected) ||
			(p.Bits() == bestBits && isConnected == connected && metric < bestMetric)
		if better {
			bestBits, bestMetric, connected, gw, dev = p.Bits(), metric, isConnected, via, out
		}
	}
	for _, c := range n.connected(t) {
		consider(c.Prefix, true, 0, dst, c.Dev)
	}
	for _, r := range n.Routes {
		if table := cmp.Or(r.Table, TableMain); table != t {
			continue
		}
		via := dst
		if r.Via.IsValid() {
			via = r.Via
		}
		out := r.Dev
		if out == "" {
			_, out, _ = l.connectedTo(n, via)
		}
		consider(r.To, false, r.Metric, via, out)
	}
	return gw, dev, bestBits >= 0 && dev != ""
}

// connectedTo finds the interface of n whose subnet holds a.
func (l *Lab) connectedTo(n *Node, a netip.Addr) (netip.Prefix, string, bool) {
	for _, i := range n.Interfaces {
		for _, p := range i.Addresses {
			if i.Kind != KindLoopback && p.Masked().Contains(a) {
				return p, i.Name, true
			}
		}
	}
	for _, b := range n.Bridges {
		for _, p := range b.Addresses {
			if p.Masked().Contains(a) {
				return p, b.Name, true
			}
		}
	}
	return netip.Prefix{}, "", false
}

// resolve follows the wire out of egress (a veth end, an interface made
// over veth ends, or a bridge) to the
// interface that holds address gw, crossing at most one switch (a bridge in
// another node). It returns that interface and any switch hops crossed.
func (l *Lab) resolve(egress Endpoint, gw netip.Addr, owner map[netip.Addr]Endpoint) (Endpoint, []Hop, error) {
	want, ok := owner[gw]
	if !ok {
		return Endpoint{}, nil, fmt.Errorf("gateway %s of %s is no address of the lab", gw, egress.Node)
	}
	n := l.Node(egress.Node)
	// VFs of one PF reach each other through the NIC's embedded switch.
	if pf, _ := l.VFOf(egress.Node, egress.Interface); pf != nil {
		if other, _ := l.VFOf(want.Node, want.Interface); other == pf {
			return want, nil, nil
		}
		return Endpoint{}, nil, fmt.Errorf("%s is a VF of %s; %s (%s) is not on that PF's switch", egress, pf.Name, gw, want)
	}
	ports, tag := n.wireEnds(egress.Interface), n.tagOf(egress.Interface) // the veth ends the frame leaves on, and its VLAN tag
	for _, out := range ports {
		peer := n.Interface(out).Peer
		if peer == want && tag == 0 {
			return peer, nil, nil
		}
		if l.landsOn(peer, want, tag) {
			return want, nil, nil
		}
		pn := l.Node(peer.Node)
		if pn == nil {
			continue
		}
		for _, b := range pn.Bridges {
			if !contains(b.Ports, peer.Interface) {
				continue
			}
			if q, ok := l.crossBridge(pn, b, peer.Interface, tag, want); ok {
				if q == "" {
					return want, nil, nil
				}
				return want, []Hop{{Node: pn.Name, In: peer.Interface, Out: q, L2: true}}, nil
			}
		}
	}
	return Endpoint{}, nil, fmt.Errorf("%s (%s) is not reachable on the wire of %s", gw, want, egress)
}

// SourceOf is the source address the file implies for packets from ep to
// dst, as the kernel picks it: the first address of dst's family on the
// egress, else the node's first such address.
func (l *Lab) SourceOf(ep Endpoint, dst netip.Addr) netip.Addr {
	n := l.Node(ep.Node)
	if n == nil {
		return netip.Addr{}
	}
	first := func(ps []netip.Prefix) netip.Addr {
		for _, p := range ps {
			if p.Addr().Is4() == dst.Is4() {
				return p.Addr()
			}
		}
		return netip.Addr{}
	}
	if i := n.Interface(ep.Interface); i != nil {
		if a := first(i.Addresses); a.IsValid() {
			return a
		}
	}
	if b := n.Bridge(ep.Interface); b != nil {
		if a := first(b.Addresses); a.IsValid() {
			return a
		}
	}
	for _, i := range n.Interfaces {
		if a := first(i.Addresses); a.IsValid() {
			return a
		}
	}
	for _, b := range n.Bridges {
		if a := first(b.Addresses); a.IsValid() {
			return a
		}
	}
	return netip.Addr{}
}

// Addresses lists every address of the lab with the interface or bridge
// that holds it, in file order.
func (l *Lab) Addresses() []Owned {
	var out []Owned
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			for _, a := range i.Addresses {
				out = append(out, Owned{Addr: a.Addr(), By: Endpoint{n.Name, i.Name}})
			}
		}
		for _, b := range n.Bridges {
			for _, a := range b.Addresses {
				out = append(out, Owned{Addr: a.Addr(), By: Endpoint{n.Name, b.Name}})
			}
		}
	}
	return out
}

// Owned is an address and the interface that holds it.
type Owned struct {
	Addr netip.Addr `json:"addr"`
	By   Endpoint   `json:"by"`
}
