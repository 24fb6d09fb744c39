// Package graph draws a lab from its file alone: as text for the terminal
// (boxes and lines, a chain reading left to right), as Graphviz dot and as
// Mermaid. It is pure.
//
// All three formats draw the same model: a box per node (its interfaces
// with their addresses, bridges with their ports, VFs with their PF, its
// routes; routers marked), a box per SR-IOV PF (in the host), and an edge
// per link between the rows of the two interfaces.
package graph

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// Graph is what the formats draw.
type Graph struct {
	Lab   string
	Boxes []*Box
	Edges []Edge
}

// Box is a node or a PF.
type Box struct {
	ID     string // node name, or "pf:" + PF name
	Title  string // "ns2", "PF ens4f0np0"
	Note   string // "router", "host", "namespace x-ns2"
	Router bool
	PF     bool
	Rows   []Row
}

// Row is a line inside a box. Port rows are where edges attach.
type Row struct {
	Text  string
	Port  string // interface name (or "vf N" in a PF box); "" for other rows
	Route bool   // a route line, drawn after the interfaces
}

// Edge joins two port rows: a veth pair, or a VF and its PF.
type Edge struct {
	A, B End
	VF   bool // a VF to its PF, not a veth pair
	// Label says what the link does to the packets each end sends (its
	// impairments), and for a link between hosts its VXLAN; "" for a
	// plain link.
	Label string
}

// End is a row of a box.
type End struct{ Box, Row int }

// nodeNote is what a node's title says besides its name: router, its
// namespace when a prefix applies, its CPU placement, its NAT and
// firewall, its routing daemons and its own hostname.
func nodeNote(l *spec.Lab, n *spec.Node) string {
	var notes []string
	switch {
	case n.Forwarding.IPv4 && !n.Forwarding.IPv6:
		notes = append(notes, "router, IPv4")
	case n.Forwarding.IPv6 && !n.Forwarding.IPv4:
		notes = append(notes, "router, IPv6")
	case n.Forwarding.IPv4:
		notes = append(notes, "router")
	}
	if n.Host != "" {
		notes = append(notes, "host "+n.Host)
	}
	if ns := l.Namespace(n.Name); ns != n.Name {
		notes = append(notes, "netns "+ns)
	}
	if n.Placed() {
		place := "cpu " + n.CPUs.String()
		if n.Receive == spec.ReceiveNAPI {
			place += " napi"
		}
		notes = append(notes, place)
	}
	for _, r := range n.NAT {
		if r.Kind == spec.NATMasquerade {
			notes = append(notes, "masquerade "+r.Match.Out)
		} else {
			notes = append(notes, r.Kind)
		}
	}
	if fw := n.Firewall; fw != nil {
		notes = append(notes, fmt.Sprintf("firewall %d rules, policy %s", len(fw.Rules), fw.Policy))
	}
	if n.FRR != nil {
		notes = append(notes, "FRR "+strings.Join(append([]string{"zebra"}, n.FRR.Daemons...), " "))
	}
	if n.BIRD != nil {
		notes = append(notes, "BIRD")
	}
	if n.Hostname != "" {
		notes = append(notes, "hostname "+n.Hostname)
	}
	return strings.Join(notes, ", ")
}

// Build makes the model of a lab.
func Build(l *spec.Lab) *Graph {
	g := &Graph{Lab: l.Name}
	rowOf := map[string]End{} // "node:iface" -> row
	for _, n := range l.Nodes {
		g.Boxes = append(g.Boxes, nodeBox(l, n, len(g.Boxes), rowOf))
	}
	for _, lk := range l.Links {
		g.Edges = append(g.Edges, Edge{A: rowOf[lk.A.String()], B: rowOf[lk.B.String()], Label: impairLabel(l, lk)})
	}
	for _, pf := range l.SRIOV {
		b := &Box{ID: "pf:" + pf.Name, Title: "PF " + pf.Name, Note: "host", PF: true}
		bi := len(g.Boxes)
		for _, vf := range pf.VFs {
			g.Edges = append(g.Edges, Edge{A: End{bi, len(b.Rows)}, B: rowOf[vf.Node+":"+vf.Name], VF: true})
			b.Rows = append(b.Rows, Row{Text: fmt.Sprintf("vf %d", vf.Index), Port: fmt.Sprintf("vf %d", vf.Index)})
		}
		b.Rows = append(b.Rows, Row{Text: fmt.Sprintf("%d VFs", pf.NumVFs)})
		g.Boxes = append(g.Boxes, b)
	}
	return g
}

// nodeBox is box bi of the graph, node n: its interfaces (bridge ports under
// their bridge), then its routes. rowOf learns where each port is.
func nodeBox(l *spec.Lab, n *spec.Node, bi int, rowOf map[string]End) *Box {
	b := &Box{ID: n.Name, Title: n.Name, Router: n.Forwarding.IPv4 || n.Forwarding.IPv6, Note: nodeNote(l, n)}
	port := func(name, text string) {
		rowOf[n.Name+":"+name] = End{bi, len(b.Rows)}
		b.Rows = append(b.Rows, Row{Text: text, Port: name})
	}
	more := func(text []string) {
		for _, t := range text {
			b.Rows = append(b.Rows, Row{Text: t})
		}
	}
	inBridge := map[string]bool{}
	for _, br := range n.Bridges {
		for _, p := range br.Ports {
			inBridge[p] = true
		}
	}
	for _, i := range n.Interfaces {
		if inBridge[i.Name] || (i.Kind == spec.KindLoopback && len(i.Addresses) == 0) {
			continue
		}
		text := ifaceText(i.Name, i.MTU, i.Addresses)
		port(i.Name, text[0])
		more(text[1:])
		if pf, vf := l.VFOf(n.Name, i.Name); pf != nil {
			more([]string{fmt.Sprintf("  VF %d of %s", vf.Index, pf.Name)})
		}
		if k := kindText(i); k != "" {
			more([]string{"  " + k})
		}
	}
	for _, br := range n.Bridges {
		text := ifaceText(br.Name+" (bridge)", br.MTU, br.Addresses)
		b.Rows = append(b.Rows, Row{Text: text[0], Port: br.Name})
		more(text[1:])
		for k, p := range br.Ports {
			lead := "├ "
			if k == len(br.Ports)-1 {
				lead = "└ "
			}
			port(p, lead+ifaceText(p, n.Interface(p).MTU, nil)[0])
		}
	}
	for _, r := range n.Routes {
		b.Rows = append(b.Rows, Row{Text: r.String(), Route: true})
	}
	for _, r := range n.Rules {
		b.Rows = append(b.Rows, Row{Text: "rule " + r.String(), Route: true})
	}
	if len(b.Rows) == 0 {
		b.Rows = append(b.Rows, Row{Text: "(no interfaces)"})
	}
	return b
}

// ifaceText is an interface's first line (name, MTU when set, first
// address) and one more line per further address.
func ifaceText(name string, mtu int, addrs []netip.Prefix) []string {
	head := name
	if mtu != 0 {
		head += fmt.Sprintf(" mtu %d", mtu)
	}
	if len(addrs) == 0 {
		return []string{head}
	}
	out := []string{head + "  " + addrs[0].String()}
	pad := strings.Repeat(" ", len([]rune(head))+2)
	for _, a := range addrs[1:] {
		out = append(out, pad+a.String())
	}
	return out
}

// Title of a box with its note, as the formats show it.
func (b *Box) FullTitle() string {
	if b.Note == "" {
		return b.Title
	}
	return b.Title + " (" + b.Note + ")"
}

// neighbours lists, per box, the boxes it has edges to.
func (g *Graph) neighbours() [][]int {
	adj := make([][]int, len(g.Boxes))
	for _, e := range g.Edges {
		adj[e.A.Box] = append(adj[e.A.Box], e.B.Box)
		adj[e.B.Box] = append(adj[e.B.Box], e.A.Box)
	}
	return adj
}

// Chain returns the boxes in order when the lab is one chain (every box
// has at most two neighbours, no cycle, one piece, no parallel links),
// else nil. A chain gets a one-line summary under the drawing.
func (g *Graph) Chain() []int {
	adj := g.neighbours()
	if len(g.Boxes) < 2 || len(g.Edges) != len(g.Boxes)-1 {
		return nil
	}
	start := -1
	for i, a := range adj {
		if len(a) > 2 || len(a) == 0 {
			return nil
		}
		if len(a) == 1 && start < 0 {
			start = i
		}
	}
	if start < 0 {
		return nil
	}
	order, prev := []int{start}, -1
	for cur := start; ; {
		next := -1
		for _, n := range adj[cur] {
			if n != prev && n != cur {
				next = n
			}
		}
		if next < 0 {
			break
		}
		prev, cur = cur, next
		order = append(order, cur)
	}
	if len(order) != len(g.Boxes) {
		return nil
	}
	return order
}

// impairLabel says what link lk does to what each end sends, and the
// queue in front of it ("ns2:veth2 sends: rate 10Mbit, queue pfifo limit
// 1000").
func impairLabel(l *spec.Lab, lk *spec.Link) string {
	var parts []string
	if lk.VNI != 0 {
		parts = append(parts, fmt.Sprintf("%s <-> %s: VXLAN %d, port %d, between hosts %s and %s", lk.A, lk.B, lk.VNI, lk.Port, l.Node(lk.A.Node).Host, l.Node(lk.B.Node).Host))
	}
	for _, ep := range []spec.Endpoint{lk.A, lk.B} {
		i := l.Node(ep.Node).Interface(ep.Interface)
		if i == nil || i.Impair == nil && i.Queue == nil {
			continue
		}
		var what []string
		if i.Impair != nil {
			what = append(what, i.Impair.String())
		}
		if i.Queue != nil {
			what = append(what, "queue "+i.Queue.String())
		}
		parts = append(parts, ep.String()+" sends: "+strings.Join(what, ", "))
	}
	return strings.Join(parts, "; ")
}

// kindText says what a made interface is made of ("macvlan bridge of
// e0"), "" for the kinds a link or the lab's SR-IOV already show.
func kindText(i *spec.Interface) string {
	switch i.Kind {
	case spec.KindMacvlan:
		return fmt.Sprintf("macvlan %s of %s", i.Macvlan.Mode, i.Macvlan.Parent)
	case spec.KindVLAN:
		return fmt.Sprintf("VLAN %d of %s", i.VLAN.ID, i.VLAN.Parent)
	case spec.KindBond:
		return fmt.Sprintf("bond %s of %s", i.Bond.Mode, strings.Join(i.Bond.Ports, ", "))
	case spec.KindVRF:
		return fmt.Sprintf("VRF table %d of %s", i.VRF.Table, strings.Join(i.VRF.Ports, ", "))
	case spec.KindVeth, spec.KindLoopback, spec.KindVF:
	}
	return ""
}
