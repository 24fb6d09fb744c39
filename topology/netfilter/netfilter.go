// Package netfilter realises a node's NAT and firewall rules (spec.NATRule,
// spec.Firewall) as one nftables table, "inet nslab", in the node's
// namespace, through netlink (github.com/google/nftables), and reads it
// back with its rule counters. Every rule carries a comment naming the lab
// and the rule's place in the file, which marks the table as nslab's and
// lets inspect name each counter. The table goes with the namespace.
//
// The expressions are the ones nft(8) 1.0 compiles the rules of Shell
// into, so that the --dry-run script builds the same table.
package netfilter

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// Table is the name of nslab's table in a node (family inet).
const Table = "nslab"

// Chain names, hooks and priorities.
const (
	Prerouting  = "prerouting"  // dnat; nat, priority dstnat (-100)
	Postrouting = "postrouting" // masquerade, snat; nat, priority srcnat (100)
	Forward     = "forward"     // firewall; filter, priority filter (0)
)

// chainDef is one chain of the table.
type chainDef struct {
	name   string
	kind   nftables.ChainType
	hook   *nftables.ChainHook
	prio   *nftables.ChainPriority
	policy nftables.ChainPolicy
	shell  string // what follows "add chain inet nslab NAME"
}

// chainsOf lists the chains node n's rules need, in creation order.
func chainsOf(n *spec.Node) []chainDef {
	var out []chainDef
	var src, dst bool
	for _, r := range n.NAT {
		src, dst = src || r.Source(), dst || !r.Source()
	}
	if dst {
		out = append(out, chainDef{Prerouting, nftables.ChainTypeNAT, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest, nftables.ChainPolicyAccept,
			"'{ type nat hook prerouting priority dstnat; policy accept; }'"})
	}
	if src {
		out = append(out, chainDef{Postrouting, nftables.ChainTypeNAT, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource, nftables.ChainPolicyAccept,
			"'{ type nat hook postrouting priority srcnat; policy accept; }'"})
	}
	if fw := n.Firewall; fw != nil || n.Flowtable {
		policy, word := nftables.ChainPolicyAccept, spec.Accept
		if fw != nil && fw.Policy == spec.Drop {
			policy, word = nftables.ChainPolicyDrop, spec.Drop
		}
		out = append(out, chainDef{Forward, nftables.ChainTypeFilter, nftables.ChainHookForward, nftables.ChainPriorityFilter, policy,
			fmt.Sprintf("'{ type filter hook forward priority filter; policy %s; }'", word)})
	}
	return out
}

// Flowtable is the name of the flowtable in nslab's table (a node's
// flowtable: true).
const Flowtable = "ft"

// FlowtablePath is where a node's flowtable is in the file: the comment
// of the rule that adds flows to it names this place.
func FlowtablePath(n *spec.Node) string { return "nodes." + n.Name + ".flowtable" }

// flowDevices are the interfaces node n's flowtable covers: all of its
// own but lo (a flow is offloaded only when both its ways enter by one).
func flowDevices(n *spec.Node) []string {
	var out []string
	for _, i := range n.Interfaces {
		if i.Name != "lo" {
			out = append(out, i.Name)
		}
	}
	return out
}

// flowRule is the forward chain's first rule when the node has a
// flowtable: it counts every packet that takes the forward path (each
// flow's first packets, and what the flowtable does not hold) and adds
// the flow. The kernel adds a TCP or UDP flow once conntrack confirmed
// it; its later packets go from the ingress hook straight to the next
// hop, past this chain, the firewall's rules included (which saw the
// flow's first packet: a flow a rule drops is never confirmed).
func flowRule(labName string, n *spec.Node) rule {
	return rule{Forward, []expr.Any{&expr.Counter{}, &expr.FlowOffload{Name: Flowtable}}, "counter flow add @" + Flowtable, Comment(labName, FlowtablePath(n))}
}

// rule is one rule of the table: its chain, what it matches and does,
// and its comment.
type rule struct {
	chain   string
	exprs   []expr.Any
	shell   string // nft's words for exprs
	comment string
}

// Comment is the comment of the rule at path of lab labName: it names the
// lab, and the rule's place in the file.
func Comment(labName, path string) string { return "nslab " + labName + " " + path }

// rulesOf compiles node n's rules, in chain order.
func rulesOf(labName string, n *spec.Node) []rule {
	var out []rule
	for _, r := range n.NAT {
		if !r.Source() {
			out = append(out, natRule(labName, r))
		}
	}
	for _, r := range n.NAT {
		if r.Source() {
			out = append(out, natRule(labName, r))
		}
	}
	if n.Flowtable {
		out = append(out, flowRule(labName, n))
	}
	if fw := n.Firewall; fw != nil {
		for _, r := range fw.Rules {
			c := compileMatch(r.Match)
			c.add("counter", &expr.Counter{})
			kind := expr.VerdictDrop
			if r.Verdict == spec.Accept {
				kind = expr.VerdictAccept
			}
			c.add(r.Verdict, &expr.Verdict{Kind: kind})
			out = append(out, rule{Forward, c.exprs, c.text(), Comment(labName, r.Path)})
		}
	}
	return out
}

// natRule compiles one NAT rule.
func natRule(labName string, r *spec.NATRule) rule {
	c := compileMatch(r.Match)
	c.add("counter", &expr.Counter{})
	chain := Postrouting
	switch r.Kind {
	case spec.NATMasquerade:
		c.add("masquerade", &expr.Masq{})
	case spec.NATSNAT:
		c.add("", &expr.Immediate{Register: 1, Data: r.To.Addr().AsSlice()})
		c.add(fmt.Sprintf("snat %s to %s", ipWord(r.To.Addr()), r.To.Addr()), &expr.NAT{Type: expr.NATTypeSourceNAT, Family: natFamily(r.To.Addr()), RegAddrMin: 1, RegAddrMax: 1})
	case spec.NATDNAT:
		chain = Prerouting
		to := r.To.Addr().String()
		c.add("", &expr.Immediate{Register: 1, Data: r.To.Addr().AsSlice()})
		nat := &expr.NAT{Type: expr.NATTypeDestNAT, Family: natFamily(r.To.Addr()), RegAddrMin: 1, RegAddrMax: 1}
		if p := r.To.Port(); p != 0 {
			c.add("", &expr.Immediate{Register: 2, Data: []byte{byte(p >> 8), byte(p)}})
			nat.RegProtoMin, nat.RegProtoMax, nat.Specified = 2, 2, true
			to = r.To.String()
		}
		c.add(fmt.Sprintf("dnat %s to %s", ipWord(r.To.Addr()), to), nat)
	}
	return rule{chain, c.exprs, c.text(), Comment(labName, r.Path)}
}

func natFamily(a netip.Addr) uint32 {
	if a.Is4() {
		return unix.NFPROTO_IPV4
	}
	return unix.NFPROTO_IPV6
}

func ipWord(a netip.Addr) string {
	if a.Is4() {
		return "ip"
	}
	return "ip6"
}

// comment is a rule comment as nft stores it: a TLV with the text and its
// terminating NUL.
func comment(text string) []byte {
	return userdata.AppendString(nil, userdata.TypeComment, text)
}

// CommentOf returns a stored rule comment's text.
func CommentOf(ud []byte) string {
	s, _ := userdata.GetString(ud, userdata.TypeComment)
	return s
}
