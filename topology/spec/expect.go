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
type Expectation struct {
	Line  string // as written, for messages: "h1 -> 10.9.0.0/24"
	From  string // a node, or "*": every node
	To    string // an address, a prefix, node or node:interface
	Reach bool
	pfx   netip.Prefix // To as a prefix when it is one (an address: /32 or /128)
}

// Matches reports whether the expectation covers an echo from node to
// addr, held by owner.
func (e Expectation) Matches(node string, addr netip.Addr, owner Endpoint) bool {
	if e.From != "*" && e.From != node {
		return false
	}
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
		return Expectation{}, fmt.Errorf("%q: write FROM -> TO, FROM a node or *, TO an address, a prefix, a node or node:interface (h1 -> 10.9.0.0/24)", s)
	}
	x := Expectation{Line: from + " -> " + to, From: from, To: to, Reach: reach}
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
		p := lab.expectPaths[i]
		if x.From != "*" && lab.Node(x.From) == nil {
			r.errf(p, "%q: %s is no node of the lab (FROM is a node or *)", x.Line, x.From)
		}
		if x.pfx.IsValid() {
			continue
		}
		ep, err := ParseEndpoint(x.To)
		switch {
		case err != nil || lab.Node(ep.Node) == nil:
			r.errf(p, "%q: %s is neither an address, a prefix nor a node of the lab", x.Line, x.To)
		case ep.Interface != "" && ep.Interface != "lo" && lab.Node(ep.Node).Interface(ep.Interface) == nil && lab.Node(ep.Node).Bridge(ep.Interface) == nil:
			r.errf(p, "%q: %s is no interface of %s", x.Line, ep.Interface, ep.Node)
		}
	}
}
