package spec

import (
	"fmt"
	"net/netip"
	"slices"
)

// validateNetfilter checks a node's NAT and firewall rules: the
// interfaces they name, ports and address families, targets, and rules
// that can never match.
func validateNetfilter(r *reporter, lab *Lab, n *Node, owners func() map[netip.Addr]Endpoint) {
	for _, rule := range n.NAT {
		key := rule.Path + "." + rule.Kind
		checkMatch(r, n, key, rule.Match)
		checkNAT(r, n, owners(), key, rule)
	}
	if fw := n.Firewall; fw != nil {
		if !n.Forwarding.IPv4 && !n.Forwarding.IPv6 {
			r.errf(fw.Path, "node %s forwards nothing, and a firewall filters what a node forwards: set forwarding: true, or remove the firewall", n.Name)
		}
		for _, rule := range fw.Rules {
			checkMatch(r, n, rule.Path+"."+rule.Verdict, rule.Match)
		}
	}
	if len(r.probs) == 0 { // a wrong key changes what a rule matches
		checkShadowed(r, n)
	}
}

// checkMatch checks the interfaces, families and ports of one match.
func checkMatch(r *reporter, n *Node, key string, m Match) {
	for _, k := range []struct{ name, dev string }{{"in", m.In}, {"out", m.Out}} {
		if k.dev != "" {
			checkRuleDevice(r, n, joinRuleKey(key, k.name), k.dev)
		}
	}
	if m.From.IsValid() && m.To.IsValid() && m.From.Addr().Is4() != m.To.Addr().Is4() {
		r.errf(key, "never matches: from %s and to %s are of different address families", m.From, m.To)
	}
	for _, p := range []netip.Prefix{m.From, m.To} {
		if p.IsValid() && (m.Proto == "icmp" && p.Addr().Is6() || m.Proto == "icmpv6" && p.Addr().Is4()) {
			r.errf(joinRuleKey(key, "proto"), "never matches: %s is of the other address family than %s", m.Proto, p)
		}
	}
	if m.Port != 0 && m.Proto != "tcp" && m.Proto != "udp" && slices.Contains(protocols, m.Proto) {
		r.errf(joinRuleKey(key, "port"), "%s has no ports: a port needs proto: tcp or udp", m.Proto)
	}
}

// joinRuleKey is the path of a key of a rule (the scalar masquerade
// form's only key is the rule itself).
func joinRuleKey(key, name string) string { return key + "." + name }

// checkRuleDevice checks that a rule's interface is an interface or a
// bridge of the node that packets can arrive on or leave by at IP level.
func checkRuleDevice(r *reporter, n *Node, path, dev string) {
	if n.Interface(dev) != nil && dev != "lo" {
		for _, b := range n.Bridges {
			if contains(b.Ports, dev) {
				r.errf(path, "%s is a port of bridge %s: at IP level packets arrive on and leave by %s, so write %s", dev, b.Name, b.Name, b.Name)
			}
		}
		return
	}
	if n.Bridge(dev) != nil {
		return
	}
	var names []string
	for _, i := range n.Interfaces {
		if i.Kind != KindLoopback {
			names = append(names, i.Name)
		}
	}
	for _, b := range n.Bridges {
		names = append(names, b.Name)
	}
	hint := ""
	if s := nearest(dev, names); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	r.errf(path, "node %s has no interface %q%s: name one of its interfaces or bridges", n.Name, dev, hint)
}

// checkNAT checks what a NAT rule needs: an egress for source NAT, a
// target of the right family that replies can reach.
func checkNAT(r *reporter, n *Node, owners map[netip.Addr]Endpoint, key string, rule *NATRule) {
	fam := rule.Match.Family()
	if rule.Source() && rule.Match.Out == "" {
		r.errf(key, "%s needs out: the interface whose packets get the new source", rule.Kind)
		return
	}
	switch rule.Kind {
	case NATMasquerade:
		if n.Interface(rule.Match.Out) == nil && n.Bridge(rule.Match.Out) == nil {
			return // reported by checkMatch
		}
		if !hasAddressOf(n, rule.Match.Out, fam) {
			r.errf(key, "never matches: %s:%s has no %saddress to masquerade as: give it one, or name the interface that has", n.Name, rule.Match.Out, familyWord(fam))
		}
	case NATSNAT:
		to := rule.To.Addr()
		if !to.IsValid() {
			return
		}
		if fam != 0 && fam != ipFamily(to) {
			r.errf(key+".to", "never matches: to %s is of the other address family than the rule's %s", to, rule.Match)
		}
		if o, ok := owners[to]; !ok || o.Node != n.Name {
			r.errf(key+".to", "replies to %s would not reach %s: snat to an address of %s itself (or use masquerade)", to, n.Name, n.Name)
		}
	case NATDNAT:
		to := rule.To.Addr()
		if !to.IsValid() {
			return
		}
		if fam != 0 && fam != ipFamily(to) {
			r.errf(key+".to", "never matches: to %s is of the other address family than the rule's %s", to, rule.Match)
		}
		if _, ok := owners[to]; !ok {
			r.errf(key+".to", "no interface of the lab has address %s: dnat must send packets to an address inside the lab", to)
		}
		if rule.To.Port() != 0 && rule.Match.Port == 0 {
			r.errf(key+".to", "a port in to rewrites the destination port: give port: (the port it replaces) and proto:")
		}
	}
}

func hasAddressOf(n *Node, dev string, fam int) bool {
	var addrs []netip.Prefix
	if i := n.Interface(dev); i != nil {
		addrs = i.Addresses
	} else if b := n.Bridge(dev); b != nil {
		addrs = b.Addresses
	}
	for _, a := range addrs {
		if fam == 0 || ipFamily(a.Addr()) == fam {
			return true
		}
	}
	return false
}

func familyWord(fam int) string {
	if fam == 0 {
		return ""
	}
	return fmt.Sprintf("IPv%d ", fam)
}

// checkShadowed reports rules that an earlier rule of the same chain
// always decides first: source NAT, destination NAT and the firewall are
// each one chain, where the first matching rule wins.
func checkShadowed(r *reporter, n *Node) {
	type ruled struct {
		m    Match
		path string
		text string
	}
	var src, dst, filter []ruled
	for _, rule := range n.NAT {
		x := ruled{rule.Match, rule.Path, rule.String()}
		if rule.Source() {
			src = append(src, x)
		} else {
			dst = append(dst, x)
		}
	}
	if n.Firewall != nil {
		for _, rule := range n.Firewall.Rules {
			filter = append(filter, ruled{rule.Match, rule.Path, rule.String()})
		}
	}
	for _, chain := range [][]ruled{src, dst, filter} {
		for j, b := range chain {
			for _, a := range chain[:j] {
				if a.m.covers(b.m) {
					r.errf(b.path, "never matches: %s (%s) takes every packet this rule would: remove it, or put it before that rule", a.path, a.text)
					break
				}
			}
		}
	}
}
