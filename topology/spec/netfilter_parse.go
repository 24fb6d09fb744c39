package spec

import (
	"fmt"
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"
)

// Keys of each NAT rule kind and of a firewall rule.
var (
	natKinds      = []string{NATMasquerade, NATSNAT, NATDNAT}
	natKeys       = map[string][]string{NATMasquerade: keysOf(masqueradeDef), NATSNAT: keysOf(snatDef), NATDNAT: keysOf(dnatDef)}
	filterKeys    = keysOf(filterDef)
	firewallKeys  = keysOf(firewallDef)
	natExample    = "[{masquerade: wan0}, {snat: {out: wan0, to: 172.30.0.1}}, {dnat: {in: wan0, port: 8080, to: \"192.168.10.2:80\"}}]"
	filterExample = "[{drop: {in: lan0, to: 10.0.0.0/8}}, {accept: {state: established}}]"
)

// parseNAT reads a node's nat: list.
func (r *reporter) parseNAT(e kv) []*NATRule {
	items, _ := r.list(e.v, e.path, natExample)
	var out []*NATRule
	for i, it := range items {
		path := fmt.Sprintf("%s[%d]", e.path, i)
		kind, v, ok := r.oneOf(it, path, natKinds, "a NAT rule such as {masquerade: wan0}")
		if !ok {
			continue
		}
		rule := &NATRule{Kind: kind, Path: path}
		kpath := path + "." + kind
		if kind == NATMasquerade && v.Kind == yaml.ScalarNode && !isNull(v) {
			rule.Match.Out, _ = r.str(v, kpath, "the interface it leaves by")
			out = append(out, rule)
			continue
		}
		f := r.fields(v, kpath, "a "+kind+" rule", natKeys[kind]...)
		to, hasTo := f["to"]
		delete(f, "to")
		rule.Match = r.parseMatch(f)
		if hasTo {
			rule.To = r.natTarget(to, kind)
		} else if kind != NATMasquerade {
			r.errf(kpath, "%s needs to: the new %s address", kind, map[string]string{NATSNAT: "source", NATDNAT: "destination"}[kind])
		}
		if kind == NATDNAT && rule.Match.Port != 0 && rule.Match.Proto == "" {
			rule.Match.Proto = "tcp" // a port without a protocol is a TCP port
		}
		out = append(out, rule)
	}
	return out
}

// oneOf reads a mapping with exactly one key out of kinds, returning it
// and its value.
func (r *reporter) oneOf(n *yaml.Node, path string, kinds []string, what string) (string, *yaml.Node, bool) {
	es := r.entries(n, path, what)
	if len(es) != 1 {
		if n.Kind == yaml.MappingNode || isNull(n) {
			r.errf(path, "must have exactly one of %s, e.g. %s", strings.Join(kinds, ", "), what)
		}
		return "", nil, false
	}
	e := es[0]
	if !contains(kinds, e.key) {
		hint := ""
		if s := nearest(e.key, kinds); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		r.errAt(e.k.Line, e.k.Column, path+"."+e.key, "unknown rule %q%s: write one of %s", e.key, hint, strings.Join(kinds, ", "))
		return "", nil, false
	}
	r.at(path+"."+e.key, e.v.Line, e.v.Column)
	return e.key, e.v, true
}

// natTarget reads a NAT rule's to: an address, and for dnat an
// optional port (192.168.10.2:80, [fd00::2]:80).
func (r *reporter) natTarget(e kv, kind string) netip.AddrPort {
	s, ok := r.str(e.v, e.path, "an address such as 192.168.10.2 or 192.168.10.2:80")
	if !ok {
		return netip.AddrPort{}
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 0)
	}
	ap, err := netip.ParseAddrPort(s)
	switch {
	case err != nil && strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "["):
		r.errf(e.path, "%q: write an IPv6 address with a port in brackets, e.g. \"[fd00::2]:80\"", s)
	case err != nil:
		r.errf(e.path, "%q is not an address or address:port: write one such as 192.168.10.2 or 192.168.10.2:80", s)
	case kind != NATDNAT:
		r.errf(e.path, "%s rewrites the source address only: write %s without :%d", kind, ap.Addr(), ap.Port())
	case ap.Port() == 0:
		r.errf(e.path, "port 0 in %q: give a port from 1 to 65535, or none", s)
	default:
		return ap
	}
	return netip.AddrPort{}
}

// parseFirewall reads a node's firewall: a list of rules (policy accept),
// or {policy: accept|drop, rules: [...]}.
func (r *reporter) parseFirewall(e kv) *Firewall {
	fw := &Firewall{Policy: Accept, Path: e.path}
	rules := e
	if e.v.Kind == yaml.MappingNode {
		f := r.fields(e.v, e.path, "a firewall ({policy: drop, rules: "+filterExample+"})", firewallKeys...)
		if p, ok := f["policy"]; ok {
			if s, ok := r.str(p.v, p.path, "accept or drop"); ok {
				if s != Accept && s != Drop {
					r.errf(p.path, "policy %q: write accept or drop", s)
				}
				fw.Policy = s
			}
		}
		var ok bool
		if rules, ok = f["rules"]; !ok {
			return fw
		}
	}
	items, _ := r.list(rules.v, rules.path, filterExample)
	for i, it := range items {
		path := fmt.Sprintf("%s[%d]", rules.path, i)
		verdict, v, ok := r.oneOf(it, path, []string{Accept, Drop}, "a firewall rule such as {drop: {in: lan0, to: 10.0.0.0/8}}")
		if !ok {
			continue
		}
		f := r.fields(v, path+"."+verdict, "a firewall rule's match", filterKeys...)
		rule := &FilterRule{Verdict: verdict, Match: r.parseMatch(f), Path: path}
		if rule.Match.Port != 0 && rule.Match.Proto == "" {
			rule.Match.Proto = "tcp"
		}
		fw.Rules = append(fw.Rules, rule)
	}
	return fw
}
