package spec

import (
	"fmt"
	"net/netip"
	"slices"

	"gopkg.in/yaml.v3"
)

var ruleKeys = keysOf(ruleDef)

// parseRule reads one entry of a node's rules:.
func (r *reporter) parseRule(v *yaml.Node, path string) *Rule {
	r.at(path, v.Line, v.Column)
	if v.Kind != yaml.MappingNode {
		r.errf(path, "a rule must be a mapping such as {from: 10.0.2.0/24, table: 100}, not %s", describe(v))
		return nil
	}
	f := r.fields(v, path, "a rule", ruleKeys...)
	rl := &Rule{}
	if e, ok := f["from"]; ok {
		rl.From = r.rulePrefix(e)
	}
	if e, ok := f["to"]; ok {
		rl.To = r.rulePrefix(e)
	}
	if e, ok := f["iif"]; ok {
		rl.IIF, _ = r.str(e.v, e.path, "an interface of the node")
	}
	if e, ok := f["oif"]; ok {
		rl.OIF, _ = r.str(e.v, e.path, "an interface of the node")
	}
	if e, ok := f["table"]; ok {
		rl.Table, _ = r.routingTable(e.v, e.path)
	} else {
		r.errf(path, "missing table: the routing table the rule sends matching packets to, e.g. table: 100")
	}
	if e, ok := f["priority"]; ok {
		rl.Priority, _ = r.integer(e.v, e.path, "the rule's priority (lower first)", 1, 1<<32-1)
	}
	return rl
}

// rulePrefix reads a rule's from: or to: (a prefix, or one address).
func (r *reporter) rulePrefix(e kv) netip.Prefix {
	s, ok := r.str(e.v, e.path, "a prefix such as 10.0.2.0/24")
	if !ok {
		return netip.Prefix{}
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen())
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		r.errf(e.path, "invalid prefix %q: want an address or a prefix such as 10.0.2.0/24", s)
	case p.Masked() != p:
		r.errf(e.path, "prefix %s has host bits set: did you mean %s?", s, p.Masked())
	default:
		return p
	}
	return netip.Prefix{}
}

// validateRules checks node n's rules (interfaces named exist, one family
// per rule) and gives each rule without a priority the one the kernel
// would: one below the lowest priority above 0 of its family so far
// (32765 for the first, as the kernel's rules are at 0, 32766 and 32767;
// 999 in a node with a VRF, whose l3mdev rule is at 1000).
func validateRules(r *reporter, n *Node) {
	kernel := []int{0, 32766, 32767}
	if slices.ContainsFunc(n.Interfaces, func(i *Interface) bool { return i.Kind == KindVRF }) {
		kernel = []int{0, L3mdevPriority, 32766, 32767} // its VRF comes first, with the l3mdev rule
	}
	prefs := map[bool][]int{false: slices.Clone(kernel), true: slices.Clone(kernel)}
	for k, rl := range n.Rules {
		path := fmt.Sprintf("nodes.%s.rules[%d]", n.Name, k)
		for _, dev := range []struct{ key, name string }{{"iif", rl.IIF}, {"oif", rl.OIF}} {
			if dev.name != "" && n.Interface(dev.name) == nil && n.Bridge(dev.name) == nil {
				r.errf(path+"."+dev.key, "%s:%s is no interface of node %s: name one of its interfaces or bridges", n.Name, dev.name, n.Name)
			}
		}
		if rl.From.IsValid() && rl.To.IsValid() && rl.From.Addr().Is6() != rl.To.Addr().Is6() {
			r.errf(path, "from: %s and to: %s are of different IP versions: a rule is IPv4 or IPv6", rl.From, rl.To)
		}
		fam := rl.Is6()
		if rl.Priority == 0 {
			if ps := prefs[fam]; ps[1] > 1 {
				rl.Priority = ps[1] - 1
			} else {
				r.errf(path, "no priority is left below %d: give this rule a priority:", ps[1])
			}
		}
		prefs[fam] = append(prefs[fam], rl.Priority)
		slices.Sort(prefs[fam])
	}
}

// L3mdevPriority is the priority of the rule the kernel adds with the
// first VRF (ip rule: 1000: from all lookup [l3mdev-table]).
const L3mdevPriority = 1000
