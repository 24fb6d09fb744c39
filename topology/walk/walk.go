// Package walk traces the path a packet takes through a lab, by the
// file's addresses, routes, policy rules, bridges (with their VLANs),
// made interfaces (macvlan, VLAN, bond, VRF), NAT and firewalls: each hop
// with its next hop and that hop's MAC, and the addresses NAT rewrites on
// the way. It is pure: it reads the lab's model (topology/spec) and
// touches nothing; topology/lab asks the kernel to confirm a deployed
// lab's path.
package walk

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/nslab/nslab/topology/spec"
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
	Via     netip.Addr    `json:"via,omitzero"`
	Gateway bool          `json:"gateway,omitempty"` // Via is a gateway from a route
	Next    spec.Endpoint `json:"next,omitzero"`
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
	NextHop spec.Endpoint `json:"next_hop,omitzero"`
	// Dest is the interface (or bridge) that holds the destination
	// address; Local says the sender holds it itself (one hop, no wire).
	Dest  spec.Endpoint `json:"dest"`
	Local bool          `json:"local,omitempty"`
}

// maxHops bounds a path, so a routing loop is an error, not a hang.
const maxHops = 64

// PathOf derives the path from a sender interface to an address from the
// lab's connected subnets, routes and links. It is pure: the next hop's MAC
// is read from the kernel by the caller.
func PathOf(l *spec.Lab, from spec.Endpoint, to netip.Addr, f spec.Flow) (*Path, error) {
	if n := l.Node(from.Node); n == nil || n.Interface(from.Interface) == nil {
		return nil, fmt.Errorf("%s is not an interface of the lab", from)
	}
	p, err := TraceFlow(l, from, to, f)
	if err != nil {
		return nil, err
	}
	if p.Local {
		return nil, fmt.Errorf("%s is an address of the sender %s itself", to, from.Node)
	}
	return p, nil
}

// FilteredError says that a node's firewall drops the traced packet: by a
// rule, or by its policy (spec.Rule is then the firewall's place in the file).
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
func Trace(l *spec.Lab, from spec.Endpoint, to netip.Addr) (*Path, error) {
	return TraceFlow(l, from, to, spec.Flow{})
}

// TraceFlow derives the path a packet of flow f takes from a node to an
// address of the lab, through the nodes' routes, NAT and firewalls.
// from.Interface may be empty: the node's route lookup picks the egress.
// A destination the node holds itself gives a one-hop path marked Local.
// A firewall that drops the packet gives a *FilteredError.
func TraceFlow(l *spec.Lab, from spec.Endpoint, to netip.Addr, f spec.Flow) (*Path, error) {
	owner := l.AddressOwners()
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
	gw, egress, err := lookup(l, n, netip.Addr{}, to, "")
	if err != nil {
		return nil, err
	}
	if from.Interface == "" {
		from.Interface = egress
	}
	if egress != from.Interface {
		return nil, fmt.Errorf("%s routes %s out of %s, not %s: send from %s:%s or fix the routes", from.Node, to, egress, from.Interface, from.Node, egress)
	}
	pkt := f.Packet(SourceOf(l, from, to), to)
	pkt.Out = from.Interface
	p := &Path{Hops: []Hop{{Node: from.Node, Out: from.Interface}}, Dest: dst}
	if !f.Reply {
		sourceNAT(l, &p.Hops[0], n, &pkt)
	}
	if err := walkPath(l, p, from, gw, &pkt, f, owner); err != nil {
		return nil, err
	}
	return p, nil
}

// walk follows the path from the sender's egress hop by hop until the node
// that holds the destination, filling p. pkt is the packet as it is on
// the wire, rewritten by the NAT rules on the way.
func walkPath(l *spec.Lab, p *Path, at spec.Endpoint, gw netip.Addr, pkt *spec.Packet, f spec.Flow, owner map[netip.Addr]spec.Endpoint) error {
	for len(p.Hops) < maxHops {
		if err := linkDown(l, at); err != nil {
			return err
		}
		next, l2, err := resolve(l, at, gw, owner)
		if err != nil {
			return err
		}
		last := &p.Hops[len(p.Hops)-1]
		last.Via, last.Gateway, last.Next, last.NextMAC = gw, gw != pkt.Dst, next, macOf(l, next)
		p.Hops = append(p.Hops, l2...)
		if len(p.Hops) == 1+len(l2) {
			p.NextHop = next
		}
		hop := Hop{Node: next.Node, In: next.Interface}
		pkt.In = next.Interface
		arrive(l, p, &hop, pkt, f, owner)
		if next.Node == p.Dest.Node {
			p.Hops = append(p.Hops, hop)
			return nil
		}
		if gw, hop.Out, err = forward(l, p, next, pkt.Src, pkt.Dst); err != nil {
			return err
		}
		pkt.Out = hop.Out
		node := l.Node(next.Node)
		if err := filter(node, *pkt); err != nil {
			return err
		}
		if !f.Reply {
			sourceNAT(l, &hop, node, pkt)
		}
		p.Hops = append(p.Hops, hop)
		at = spec.Endpoint{Node: next.Node, Interface: hop.Out}
	}
	return fmt.Errorf("the path to %s is longer than %d hops", pkt.Dst, maxHops)
}

// linkDown says when egress ep cannot carry the packet: a deployed lab's
// kernel has it down, or up without carrier (it routes out of it, and the
// device drops what it is given).
func linkDown(l *spec.Lab, ep spec.Endpoint) error {
	i := l.Node(ep.Node).Interface(ep.Interface)
	switch {
	case i == nil:
		return nil
	case i.Down:
		return fmt.Errorf("the path leaves %s by %s, which is down", ep.Node, ep.Interface)
	case i.NoCarrier:
		return fmt.Errorf("the path leaves %s by %s, which has no carrier (its link is down): the kernel routes out of it and the device drops what it is given", ep.Node, ep.Interface)
	}
	return nil
}

// arrive applies what a node does to a packet as it arrives (prerouting):
// a dnat rule gives a new packet a new destination; a reply to a source
// the node rewrote gets its original destination back.
func arrive(l *spec.Lab, p *Path, hop *Hop, pkt *spec.Packet, f spec.Flow, owner map[netip.Addr]spec.Endpoint) {
	n := l.Node(hop.Node)
	if f.Reply {
		if orig, ok := f.Restore[hop.Node]; ok && owner[pkt.Dst].Node == hop.Node {
			pkt.Dst, p.Dest = orig, owner[orig]
		}
		return
	}
	for _, r := range n.NAT {
		if r.Kind != spec.NATDNAT || !r.Match.Matches(*pkt) {
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
func filter(n *spec.Node, pkt spec.Packet) error {
	fw := n.Firewall
	if fw == nil {
		return nil
	}
	for _, r := range fw.Rules {
		if r.Match.Matches(pkt) {
			if r.Verdict == spec.Drop {
				return &FilteredError{Node: n.Name, Rule: r.Path, Words: r.String()}
			}
			return nil
		}
	}
	if fw.Policy == spec.Drop {
		return &FilteredError{Node: n.Name, Rule: fw.Path, Words: "policy drop, and no rule accepts it"}
	}
	return nil
}

// sourceNAT applies a node's first matching masquerade or snat rule to a
// packet leaving it, recording the new source on the hop.
func sourceNAT(l *spec.Lab, hop *Hop, n *spec.Node, pkt *spec.Packet) {
	for _, r := range n.NAT {
		if !r.Source() || !r.Match.Matches(*pkt) {
			continue
		}
		src := r.To.Addr()
		if r.Kind == spec.NATMasquerade {
			src = SourceOf(l, spec.Endpoint{Node: n.Name, Interface: pkt.Out}, pkt.Dst)
		}
		pkt.Src, hop.SNAT, hop.SNATBy = src, src, r.Path
		return
	}
}

// Restore lists the nodes on the path that rewrote the source, with the
// source they replaced: a reply reaching such a node gets that address
// as its destination (see spec.Flow).
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
func forward(l *spec.Lab, p *Path, at spec.Endpoint, src, to netip.Addr) (netip.Addr, string, error) {
	node := l.Node(at.Node)
	if (to.Is4() && !node.Forwarding.IPv4) || (to.Is6() && !node.Forwarding.IPv6) {
		return netip.Addr{}, "", fmt.Errorf("the path to %s crosses node %s, which does not forward %s: set forwarding: true there", to, at.Node, family(to))
	}
	gw, egress, err := lookup(l, node, src, to, at.Interface)
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
func macOf(l *spec.Lab, ep spec.Endpoint) net.HardwareAddr {
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

// lookup does node n's route lookup for a packet from src (invalid: one
// the node sends itself, before it chose a source) to dst that arrived on
// iif ("": sent by the node): the tables its rules give, in order (see
// spec.Node.tables), and in each the longest prefix first, connected subnets
// (main table) before routes of the same length, then lower metric. It
// returns the next hop's address (dst itself when on-link) and the egress.
func lookup(l *spec.Lab, n *spec.Node, src, dst netip.Addr, iif string) (netip.Addr, string, error) {
	for _, t := range tables(n, src, dst, iif) {
		if gw, dev, ok := lookupTable(l, n, t, dst); ok {
			return gw, dev, nil
		}
	}
	switch {
	case n.Stopped:
		return netip.Addr{}, "", fmt.Errorf("node %s is stopped (nslab node stop): its daemons learn nothing, and its kernel has no route to %s", n.Name, dst)
	case n.RunsRouting() && n.KernelRead && !announced(l, dst):
		return netip.Addr{}, "", fmt.Errorf("node %s has no route to %s in its kernel, and no daemon can learn one: every interface on %s's subnet is down or in a stopped node", n.Name, dst, dst)
	case n.RunsRouting():
		if ok, why := l.Learns(n.Name, dst); !ok {
			return netip.Addr{}, "", fmt.Errorf("node %s has no route to %s, and its daemons can learn none: %s", n.Name, dst, why)
		}
		return netip.Addr{}, "", &LearnedError{Node: n.Name, To: dst, Deployed: n.KernelRead}
	case n.KernelRead:
		return netip.Addr{}, "", fmt.Errorf("node %s has no route to %s in its kernel", n.Name, dst)
	}
	return netip.Addr{}, "", fmt.Errorf("node %s has no route to %s: add one under nodes.%s.routes", n.Name, dst, n.Name)
}

// announced reports whether a routing daemon can learn a route to dst in
// deployed lab l: some node that is not stopped has it on a subnet of an
// interface (or bridge) that is up with its carrier, or on its loopback.
func announced(l *spec.Lab, dst netip.Addr) bool {
	for _, n := range l.Nodes {
		if n.Stopped {
			continue
		}
		for _, i := range n.Interfaces {
			for _, p := range i.Addrs() {
				if !i.Down && !i.NoCarrier && p.Masked().Contains(dst) {
					return true
				}
			}
		}
		for _, b := range n.Bridges {
			for _, p := range b.Addrs() {
				if p.Masked().Contains(dst) {
					return true
				}
			}
		}
	}
	return false
}

// LearnedError is a lookup that the file cannot answer: the node has no
// route to the destination in the file, and runs routing daemons that
// learn routes once deployed. A deployed lab's walk has the kernel's
// routes (see spec.Node.Learned) and does not meet it for a route learned.
type LearnedError struct {
	Node string
	To   netip.Addr
	// Deployed: the node's kernel was read, and has no route there (yet).
	Deployed bool
}

func (e *LearnedError) Error() string {
	if e.Deployed {
		return fmt.Sprintf("node %s has no route to %s in its kernel: its routing daemons have not learned one (yet: a check that waits gives them time)", e.Node, e.To)
	}
	return fmt.Sprintf("node %s has no route to %s in the file; it runs routing daemons, whose routes the deployed lab has: deploy it, and ask nslab path or check then", e.Node, e.To)
}

// lookupTable is lookup in routing table t alone.
func lookupTable(l *spec.Lab, n *spec.Node, t int, dst netip.Addr) (netip.Addr, string, bool) {
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
	for _, c := range connectedSubnets(n, t) {
		consider(c.Prefix, true, 0, dst, c.Dev)
	}
	routes := slices.Concat(n.Routes, n.Learned)
	if n.KernelRead {
		routes = n.Learned
	}
	for _, r := range routes {
		if table := cmp.Or(r.Table, spec.TableMain); table != t {
			continue
		}
		if i := n.Interface(r.Dev); i != nil && i.Down {
			continue
		}
		via := dst
		if r.Via.IsValid() {
			via = r.Via
		}
		out := r.Dev
		if out == "" {
			_, out, _ = connectedTo(l, n, via)
		}
		consider(r.To, false, r.Metric, via, out)
	}
	return gw, dev, bestBits >= 0 && dev != ""
}

// connectedTo finds the interface of n whose subnet holds a.
func connectedTo(l *spec.Lab, n *spec.Node, a netip.Addr) (netip.Prefix, string, bool) {
	for _, i := range n.Interfaces {
		for _, p := range i.Addrs() {
			if i.Kind != spec.KindLoopback && !i.Down && p.Masked().Contains(a) {
				return p, i.Name, true
			}
		}
	}
	for _, b := range n.Bridges {
		for _, p := range b.Addrs() {
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
func resolve(l *spec.Lab, egress spec.Endpoint, gw netip.Addr, owner map[netip.Addr]spec.Endpoint) (spec.Endpoint, []Hop, error) {
	want, ok := owner[gw]
	if !ok {
		return spec.Endpoint{}, nil, fmt.Errorf("gateway %s of %s is no address of the lab", gw, egress.Node)
	}
	n := l.Node(egress.Node)
	// VFs of one PF reach each other through the NIC's embedded switch.
	if pf, _ := l.VFOf(egress.Node, egress.Interface); pf != nil {
		if other, _ := l.VFOf(want.Node, want.Interface); other == pf {
			return want, nil, nil
		}
		return spec.Endpoint{}, nil, fmt.Errorf("%s is a VF of %s; %s (%s) is not on that PF's switch", egress, pf.Name, gw, want)
	}
	ports, tag := wireEnds(n, egress.Interface), tagOf(n, egress.Interface) // the veth ends the frame leaves on, and its VLAN tag
	for _, out := range ports {
		peer := n.Interface(out).Peer
		if peer == want && tag == 0 {
			return peer, nil, nil
		}
		if landsOn(l, peer, want, tag) {
			return want, nil, nil
		}
		pn := l.Node(peer.Node)
		if pn == nil {
			continue
		}
		for _, b := range pn.Bridges {
			if !slices.Contains(b.Ports, peer.Interface) {
				continue
			}
			if q, ok := crossBridge(l, pn, b, peer.Interface, tag, want); ok {
				if q == "" {
					return want, nil, nil
				}
				return want, []Hop{{Node: pn.Name, In: peer.Interface, Out: q, L2: true}}, nil
			}
		}
	}
	return spec.Endpoint{}, nil, fmt.Errorf("%s (%s) is not reachable on the wire of %s", gw, want, egress)
}

// SourceOf is the source address the file implies for packets from ep to
// dst, as the kernel picks it: the first address of dst's family on the
// egress, else the node's first such address.
func SourceOf(l *spec.Lab, ep spec.Endpoint, dst netip.Addr) netip.Addr {
	n := l.Node(ep.Node)
	if n == nil {
		return netip.Addr{}
	}
	first := func(ps []netip.Prefix) netip.Addr {
		for _, p := range ps {
			if p.Addr().Is4() == dst.Is4() && p.Addr().IsLinkLocalUnicast() == dst.IsLinkLocalUnicast() {
				return p.Addr()
			}
		}
		return netip.Addr{}
	}
	if i := n.Interface(ep.Interface); i != nil {
		if a := first(i.Addrs()); a.IsValid() {
			return a
		}
	}
	if b := n.Bridge(ep.Interface); b != nil {
		if a := first(b.Addrs()); a.IsValid() {
			return a
		}
	}
	for _, i := range n.Interfaces {
		if a := first(i.Addrs()); a.IsValid() {
			return a
		}
	}
	for _, b := range n.Bridges {
		if a := first(b.Addrs()); a.IsValid() {
			return a
		}
	}
	return netip.Addr{}
}

// What the packet walk needs to know of made interfaces (see Kind): which
// wires their frames leave on, with which VLAN tag, and which VRF's table
// an interface's packets are routed in.

// wireEnds returns the veth ends (or VFs) the frames node n sends out of
// interface or bridge name leave on: a bridge's ports, a macvlan's or
// VLAN's parent's wire, a bond's ports' wires (a bond sends on one of them
// at a time; the walk takes the first that reaches the next hop).
func wireEnds(n *spec.Node, name string) []string {
	if b := n.Bridge(name); b != nil {
		return b.Ports
	}
	i := n.Interface(name)
	if i == nil {
		return nil
	}
	switch i.Kind {
	case spec.KindVeth, spec.KindVF:
		return []string{name}
	case spec.KindMacvlan, spec.KindVLAN, spec.KindBond:
		var out []string
		for _, lo := range i.Lower() {
			out = append(out, wireEnds(n, lo)...)
		}
		return out
	case spec.KindLoopback, spec.KindVRF:
	}
	return nil
}

// tagOf is the 802.1Q tag of frames sent out of interface name of node n:
// the ID of the VLAN it is or is made over, 0 for none.
func tagOf(n *spec.Node, name string) int {
	i := n.Interface(name)
	if i == nil {
		return 0
	}
	switch i.Kind {
	case spec.KindVLAN:
		return i.VLAN.ID
	case spec.KindMacvlan:
		return tagOf(n, i.Macvlan.Parent)
	case spec.KindVeth, spec.KindVF, spec.KindLoopback, spec.KindBond, spec.KindVRF:
	}
	return 0
}

// landsOn reports whether a frame with VLAN tag tag, arriving at veth end
// peer, reaches interface want of the same node: a macvlan, VLAN or bond
// made over peer's wire with that tag.
func landsOn(l *spec.Lab, peer, want spec.Endpoint, tag int) bool {
	if peer.Node != want.Node {
		return false
	}
	n := l.Node(want.Node)
	i := n.Interface(want.Interface)
	if i == nil || !i.Kind.Made() || i.Kind == spec.KindVRF {
		return false
	}
	return tagOf(n, want.Interface) == tag && slices.Contains(wireEnds(n, want.Interface), peer.Interface)
}

// vrfOf returns the VRF interface name is a port of in node n, or nil.
func vrfOf(n *spec.Node, name string) *spec.Interface {
	for _, i := range n.Interfaces {
		if i.Kind == spec.KindVRF && slices.Contains(i.VRF.Ports, name) {
			return i
		}
	}
	return nil
}

// connectedIn reports whether the subnets of interface i are routes of
// table t: the table of its VRF, or main for one in no VRF.
func connectedIn(n *spec.Node, i string, t int) bool {
	if v := vrfOf(n, i); v != nil {
		return v.VRF.Table == t
	}
	return t == spec.TableMain
}

// subnet is a connected subnet of a node and the interface it is on.
type subnet struct {
	netip.Prefix
	Dev string
}

// connectedSubnets returns node n's connected subnets that are routes of table
// t (see connectedIn): those of its interfaces but lo, and of its bridges.
func connectedSubnets(n *spec.Node, t int) []subnet {
	var out []subnet
	for _, i := range n.Interfaces {
		for _, a := range i.Addrs() {
			if i.Kind != spec.KindLoopback && !i.Down && connectedIn(n, i.Name, t) {
				out = append(out, subnet{a, i.Name})
			}
		}
	}
	for _, b := range n.Bridges {
		for _, a := range b.Addrs() {
			if connectedIn(n, b.Name, t) {
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
func crossBridge(l *spec.Lab, pn *spec.Node, b *spec.Bridge, in string, tag int, want spec.Endpoint) (q string, ok bool) {
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
	if (spec.Endpoint{Node: pn.Name, Interface: b.Name}) == want {
		return "", vid == 0 || (b.VLANFiltering && vid == spec.DefaultPVID)
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
		if (peer == want && out == 0) || landsOn(l, peer, want, out) {
			return q, true
		}
	}
	return "", false
}

// ruleMatches reports whether a packet from src (invalid: the node's own,
// not yet chosen) to dst, arriving on iif ("": sent by the node) and
// leaving by oif ("": not yet known), matches rule rl.
func ruleMatches(rl *spec.Rule, src, dst netip.Addr, iif string) bool {
	switch {
	case rl.Is6() != dst.Is6() && (rl.From.IsValid() || rl.To.IsValid()):
		return false
	case rl.From.IsValid() && (!src.IsValid() || !rl.From.Contains(src)):
		return false
	case rl.To.IsValid() && !rl.To.Contains(dst):
		return false
	case rl.IIF != "" && rl.IIF != iif:
		return false
	case rl.OIF != "":
		return false // matches only sockets bound to a device, which the walk does not model
	}
	return true
}

// tables returns the routing tables node n looks up for a packet, in
// order: its matching rules by priority (with the kernel's l3mdev rule
// for a packet that arrived on a VRF's port), then main (the kernel's rule
// 32766). The kernel's local table (rule 0) is the destination check the
// walk does itself.
func tables(n *spec.Node, src, dst netip.Addr, iif string) []int {
	rules := slices.Clone(n.Rules)
	if v := vrfOf(n, iif); v != nil {
		// The kernel's l3mdev rule: what arrives on a VRF's port is
		// looked up in the VRF's table.
		rules = append(rules, &spec.Rule{IIF: iif, Table: v.VRF.Table, Priority: spec.L3mdevPriority})
	}
	slices.SortStableFunc(rules, func(a, b *spec.Rule) int { return a.Priority - b.Priority })
	var out []int
	mainDone := false
	for _, rl := range rules {
		if rl.Priority >= 32766 && !mainDone {
			out, mainDone = append(out, spec.TableMain), true
		}
		if ruleMatches(rl, src, dst, iif) {
			out = append(out, rl.Table)
			if rl.Priority == spec.L3mdevPriority && rl.IIF == iif && vrfOf(n, iif) != nil {
				return out // the VRF's table ends in an unreachable default (see VRFUnreachableMetric)
			}
		}
	}
	if !mainDone {
		out = append(out, spec.TableMain)
	}
	return out
}

// CheckPaths sets lab l's Unrouted: each traffic run of the file the
// file's routes do not take to its destination, at its to:. Exec lines,
// daemons and routes added by hand give a deployed lab routes the file
// does not have, so these are findings, not refusals: validate names
// them, path, check and bench go by the deployed kernels. cmd calls it
// once the file has parsed.
func CheckPaths(l *spec.Lab) {
	l.Unrouted = nil
	for i, t := range l.Traffic {
		if err := unrouted(l, t); err != nil {
			l.Unrouted = append(l.Unrouted, l.At(fmt.Sprintf("traffic[%d].to", i), "%v", err))
		}
	}
}

// TrafficPath says whether the lab's model (the file's, or a deployed
// lab's kernels' once read) takes run t (of the file, or given on the
// command line) to its destination: nil, or Problems naming its to:.
func TrafficPath(l *spec.Lab, t *spec.Traffic) error {
	if err := unrouted(l.Model(), t); err != nil { // a part's runs cross the whole lab
		return spec.Problems{l.At(fmt.Sprintf("traffic[%s].to", t.Name), "%v", err)}
	}
	return nil
}

// unrouted is why the lab's routes do not take run t to its destination,
// nil when they do, or when only the daemons' routes can (known once
// deployed).
func unrouted(l *spec.Lab, t *spec.Traffic) error {
	_, err := PathOf(l, t.From, t.To, t.Flow())
	if _, learned := errors.AsType[*LearnedError](err); learned {
		return nil
	}
	return err
}
