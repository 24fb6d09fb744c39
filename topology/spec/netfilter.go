package spec

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// NAT and firewall rules of a node. nslab realises them as one nftables
// table of the inet family in the node's namespace (package netfilter):
// masquerade and snat in a postrouting nat chain, dnat in a prerouting nat
// chain, firewall rules in a forward filter chain. The firewall filters
// the packets the node forwards; what the node itself sends and receives
// is not filtered.

// Kinds of NAT rule.
const (
	NATMasquerade = "masquerade"
	NATSNAT       = "snat"
	NATDNAT       = "dnat"
)

// Firewall verdicts (and chain policies).
const (
	Accept = "accept"
	Drop   = "drop"
)

// Protocols a rule can match.
var protocols = []string{"tcp", "udp", "icmp", "icmpv6"}

// Connection tracking states a firewall rule can match.
var ctStates = []string{"new", "established", "related", "invalid"}

// Match selects packets: every field that is set must hold.
type Match struct {
	In    string       // ingress interface or bridge
	Out   string       // egress interface or bridge
	From  netip.Prefix // source; invalid: any
	To    netip.Prefix // destination; invalid: any
	Proto string       // tcp, udp, icmp, icmpv6; "": any
	Port  int          // destination port (tcp, udp); 0: any
	State []string     // connection tracking states; empty: any
}

// NATRule rewrites addresses of the packets it matches.
type NATRule struct {
	Kind  string // NATMasquerade, NATSNAT or NATDNAT
	Match Match
	// To is the new source (snat) or destination (dnat) address; its port,
	// when not 0, the new destination port (dnat).
	To   netip.AddrPort
	Path string // where the rule is in the file: nodes.N.nat[i]
}

// FilterRule accepts or drops the forwarded packets it matches.
type FilterRule struct {
	Verdict string // Accept or Drop
	Match   Match
	Path    string // nodes.N.firewall[i] (or .rules[i])
}

// Firewall filters what a node forwards: the first rule that matches
// decides; Policy decides for packets no rule matches.
type Firewall struct {
	Policy string // Accept or Drop
	Rules  []*FilterRule
	Path   string // nodes.N.firewall
}

// Family is the IP family the match is limited to (4 or 6), or 0.
func (m Match) Family() int {
	switch {
	case m.From.IsValid():
		return ipFamily(m.From.Addr())
	case m.To.IsValid():
		return ipFamily(m.To.Addr())
	case m.Proto == "icmp":
		return 4
	case m.Proto == "icmpv6":
		return 6
	}
	return 0
}

func ipFamily(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// String renders the match as nslab's own words, in a fixed order:
// "in lan0 to 10.0.0.0/8 tcp port 80 state established".
func (m Match) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	add("in", m.In)
	add("out", m.Out)
	if m.From.IsValid() {
		add("from", prefixText(m.From))
	}
	if m.To.IsValid() {
		add("to", prefixText(m.To))
	}
	if m.Proto != "" {
		parts = append(parts, m.Proto)
	}
	if m.Port != 0 {
		add("port", strconv.Itoa(m.Port))
	}
	if len(m.State) > 0 {
		add("state", strings.Join(m.State, ","))
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// prefixText is a prefix as written: an address alone when it is one.
func prefixText(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// String renders the rule: "masquerade out wan0", "snat out wan0 to
// 172.30.0.1", "dnat in wan0 tcp port 8080 to 192.168.10.2:80".
func (n *NATRule) String() string {
	s := n.Kind + " " + n.Match.String()
	switch {
	case n.Kind == NATMasquerade:
	case n.To.Port() != 0:
		s += " to " + n.To.String()
	default:
		s += " to " + n.To.Addr().String()
	}
	return s
}

// String renders the rule: "drop in lan0 to 10.0.0.0/8".
func (f *FilterRule) String() string { return f.Verdict + " " + f.Match.String() }

// Source reports whether the rule rewrites the source (masquerade, snat).
func (n *NATRule) Source() bool { return n.Kind != NATDNAT }

// Packet is what a rule looks at, for working out a path from the file.
type Packet struct {
	In, Out  string
	Src, Dst netip.Addr
	Proto    string // tcp, udp, icmp, icmpv6
	Port     int    // destination port; 0 for icmp
	State    string // new, established (a reply)
}

// Matches reports whether the match selects p.
func (m Match) Matches(p Packet) bool {
	switch {
	case m.In != "" && m.In != p.In, m.Out != "" && m.Out != p.Out:
		return false
	case m.From.IsValid() && !m.From.Contains(p.Src), m.To.IsValid() && !m.To.Contains(p.Dst):
		return false
	case m.Family() != 0 && m.Family() != ipFamily(p.Dst):
		return false
	case m.Proto != "" && m.Proto != p.Proto, m.Port != 0 && m.Port != p.Port:
		return false
	case len(m.State) > 0 && !slices.Contains(m.State, p.State):
		return false
	}
	return true
}

// covers reports whether m selects every packet o selects, so that a rule
// with o after a rule with m in the same chain never decides anything.
func (m Match) covers(o Match) bool {
	prefix := func(a, b netip.Prefix) bool {
		return !a.IsValid() || b.IsValid() && b.Bits() >= a.Bits() && a.Contains(b.Addr())
	}
	sub := func(a, b []string) bool {
		if len(a) == 0 {
			return true
		}
		if len(b) == 0 {
			return false
		}
		for _, s := range b {
			if !slices.Contains(a, s) {
				return false
			}
		}
		return true
	}
	return (m.In == "" || m.In == o.In) && (m.Out == "" || m.Out == o.Out) &&
		prefix(m.From, o.From) && prefix(m.To, o.To) &&
		(m.Proto == "" || m.Proto == o.Proto) && (m.Port == 0 || m.Port == o.Port) &&
		(m.Family() == 0 || m.Family() == o.Family()) && sub(m.State, o.State)
}

// RuleWords maps the place in the file of each of the node's NAT and
// firewall rules (nodes.N.nat[i]) to the rule in nslab's words.
func (n *Node) RuleWords() map[string]string {
	out := map[string]string{}
	for _, r := range n.NAT {
		out[r.Path] = r.String()
	}
	if n.Firewall != nil {
		for _, r := range n.Firewall.Rules {
			out[r.Path] = r.String()
		}
	}
	if n.Flowtable {
		out["nodes."+n.Name+".flowtable"] = "add each flow to the flowtable"
	}
	return out
}

// HasNetfilter reports whether the node has NAT or firewall rules.
func (n *Node) HasNetfilter() bool { return len(n.NAT) > 0 || n.Firewall != nil || n.Flowtable }

// parseMatchKeys reads the match keys of a rule that the rule allows.
func (r *reporter) parseMatch(f map[string]kv) Match {
	var m Match
	for _, k := range []struct {
		key string
		s   *string
	}{{"in", &m.In}, {"out", &m.Out}} {
		if e, ok := f[k.key]; ok {
			*k.s, _ = r.str(e.v, e.path, "an interface name")
		}
	}
	for _, k := range []struct {
		key string
		p   *netip.Prefix
	}{{"from", &m.From}, {"to", &m.To}} {
		if e, ok := f[k.key]; ok {
			*k.p = r.prefixOrAddr(e)
		}
	}
	if e, ok := f["proto"]; ok {
		if s, ok := r.str(e.v, e.path, "tcp, udp, icmp or icmpv6"); ok {
			if !slices.Contains(protocols, s) {
				r.errf(e.path, "protocol %q: write one of %s", s, strings.Join(protocols, ", "))
			}
			m.Proto = s
		}
	}
	if e, ok := f["port"]; ok {
		m.Port, _ = r.integer(e.v, e.path, "a destination port", 1, 65535)
	}
	if e, ok := f["state"]; ok {
		m.State = r.states(e)
	}
	return m
}

// prefixOrAddr reads an address with or without a prefix length (an
// address alone is a /32 or /128).
func (r *reporter) prefixOrAddr(e kv) netip.Prefix {
	s, ok := r.str(e.v, e.path, "an address or a prefix such as 10.0.0.0/8")
	if !ok {
		return netip.Prefix{}
	}
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			r.errf(e.path, "%q is not an address or a prefix: write one such as 10.0.0.0/8 or 10.0.1.2", s)
			return netip.Prefix{}
		}
		return netip.PrefixFrom(a, a.BitLen())
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		r.errf(e.path, "%q is not a prefix: write one such as 10.0.0.0/8", s)
		return netip.Prefix{}
	}
	if p.Masked() != p {
		r.errf(e.path, "prefix %s has host bits set: write %s", p, p.Masked())
	}
	return p.Masked()
}

// states reads a connection tracking state or a list of them.
func (r *reporter) states(e kv) []string {
	var items []string
	if s, ok := e.v.Value, e.v.Kind != 0 && len(e.v.Content) == 0 && e.v.Tag == "!!str"; ok {
		items = []string{s}
	} else {
		nodes, _ := r.list(e.v, e.path, "[established, related]")
		for i, it := range nodes {
			if s, ok := r.str(it, fmt.Sprintf("%s[%d]", e.path, i), "a state"); ok {
				items = append(items, s)
			}
		}
	}
	for _, s := range items {
		if !slices.Contains(ctStates, s) {
			r.errf(e.path, "state %q: write one or more of %s", s, strings.Join(ctStates, ", "))
		}
	}
	return items
}
