package spec

import (
	"fmt"
	"net/netip"
	"strings"
)

// Expectation is one line of the file's expect: (what nslab check holds
// a deployed lab to, over what its routes say): echoes from a node (or
// every node) to an address, a prefix, or every address of a node or
// interface are answered (Reach) or not. Labs leave prefixes out of their
// routing on purpose; this is how a lab says so, and check --wait then
// converges without them.
//
// FROM may name an interface (r1:lo -> r3:lo): the echo then leaves with
// that interface's address as its source, as ping -I does, which is how
// routing labs that announce only their loopbacks test each other's. Such
// a line makes pairs of its own; it does not cover the pairs sent from
// the address the kernel chooses.
type Expectation struct {
	Line   string // as written, for messages: "h1 -> 10.9.0.0/24"
	From   string // a node, or "*": every node
	Source string // an interface of From whose address the echo is sent from; "": the kernel's choice
	To     string // an address, a prefix, node or node:interface
	Reach  bool
	pfx    netip.Prefix // To as a prefix when it is one (an address: /32 or /128)
}

// Matches reports whether the expectation covers an echo from node to
// addr, held by owner, from the source address the kernel chooses.
func (e Expectation) Matches(node string, addr netip.Addr, owner Endpoint) bool {
	if e.Source != "" || (e.From != "*" && e.From != node) {
		return false
	}
	return e.Covers(addr, owner)
}

// Says is the line as a reason: "the file's expect: says "h1 -> r5" is
// unreachable".
func (e Expectation) Says() string {
	what := "unreachable"
	if e.Reach {
		what = "reachable"
	}
	return fmt.Sprintf("the file's expect: says %q is %s", e.Line, what)
}

// Covers reports whether TO covers addr, held by owner.
func (e Expectation) Covers(addr netip.Addr, owner Endpoint) bool {
	if e.pfx.IsValid() {
		return e.pfx.Contains(addr)
	}
	return e.To == owner.Node || e.To == owner.String()
}

// Expect is the file's expectation for an echo from node to addr (held by
// owner): the last line of expect: that covers it, and whether one does.
func (l *Lab) Expect(node string, addr netip.Addr, owner Endpoint) (Expectation, bool) {
	var found Expectation
	ok := false
	for _, e := range l.Expects {
		if e.Matches(node, addr, owner) {
			found, ok = e, true
		}
	}
	return found, ok
}

// Sourced is the expect: lines whose FROM names an interface, in order.
func (l *Lab) Sourced() []Expectation {
	var out []Expectation
	for _, e := range l.Expects {
		if e.Source != "" {
			out = append(out, e)
		}
	}
	return out
}

// parseExpect reads expect: {unreachable: [...], reachable: [...]}, each
// line "FROM -> TO".
func (r *reporter) parseExpect(e kv, lab *Lab) {
	f := r.fields(e.v, e.path, "expect:", keysOf(expectDef)...)
	for _, key := range []string{"unreachable", "reachable"} {
		le, ok := f[key]
		if !ok {
			continue
		}
		items, _ := r.list(le.v, le.path, `["h1 -> 10.9.0.0/24", "* -> r5"]`)
		for i, item := range items {
			p := fmt.Sprintf("%s[%d]", le.path, i)
			s, ok := r.str(item, p, "FROM -> TO")
			if !ok {
				continue
			}
			x, err := parseExpectation(s, key == "reachable")
			if err != nil {
				r.errf(p, "%v", err)
				continue
			}
			lab.Expects = append(lab.Expects, x)
			r.at(p, item.Line, item.Column)
			lab.expectPaths = append(lab.expectPaths, p)
		}
	}
}

func parseExpectation(s string, reach bool) (Expectation, error) {
	from, to, ok := strings.Cut(s, "->")
	from, to = strings.TrimSpace(from), strings.TrimSpace(to)
	if !ok || from == "" || to == "" {
		return Expectation{}, fmt.Errorf("%q: write FROM -> TO, FROM a node, node:interface (its address the source) or *, TO an address, a prefix, a node or node:interface (h1 -> 10.9.0.0/24, r1:lo -> r3:lo)", s)
	}
	x := Expectation{Line: from + " -> " + to, From: from, To: to, Reach: reach}
	if node, ifc, ok := strings.Cut(from, ":"); ok {
		if node == "*" || node == "" || ifc == "" {
			return Expectation{}, fmt.Errorf("%q: FROM with a source interface names one node and one of its interfaces (r1:lo), not %q", s, from)
		}
		x.From, x.Source = node, ifc
	}
	if p, err := netip.ParsePrefix(to); err == nil {
		x.pfx = p.Masked()
	} else if a, err := netip.ParseAddr(to); err == nil {
		x.pfx = netip.PrefixFrom(a, a.BitLen())
	}
	return x, nil
}

// validateExpects checks that every expectation names nodes and
// interfaces of the lab.
func validateExpects(r *reporter, lab *Lab) {
	for i, x := range lab.Expects {
		validateExpectation(r, lab, x, lab.expectPaths[i])
	}
	for _, t := range lab.Tests {
		if t.Kind == "reachable" || t.Kind == "unreachable" {
			validateExpectation(r, lab, t.Reach, t.Path+"."+t.Kind)
		}
	}
}

// validateExpectation checks that FROM and TO of one line name the lab's
// nodes and interfaces.
func validateExpectation(r *reporter, lab *Lab, x Expectation, p string) {
	if x.From != "*" && lab.Node(x.From) == nil {
		r.errf(p, "%q: %s is no node of the lab (FROM is a node, node:interface or *)", x.Line, x.From)
	} else if x.Source != "" && !lab.Node(x.From).hasDevice(x.Source) {
		r.errf(p, "%q: %s is no interface of %s (the source's interface: lo, one of its links' or a bridge)", x.Line, x.Source, x.From)
	}
	if x.pfx.IsValid() {
		return
	}
	ep, err := ParseEndpoint(x.To)
	switch {
	case err != nil || lab.Node(ep.Node) == nil:
		r.errf(p, "%q: %s is neither an address, a prefix nor a node of the lab", x.Line, x.To)
	case ep.Interface != "" && !lab.Node(ep.Node).hasDevice(ep.Interface):
		r.errf(p, "%q: %s is no interface of %s", x.Line, ep.Interface, ep.Node)
	}
}

// hasDevice reports whether the node has a device of that name: lo, an
// interface or a bridge.
func (n *Node) hasDevice(name string) bool {
	return name == "lo" || n.Interface(name) != nil || n.Bridge(name) != nil
}
