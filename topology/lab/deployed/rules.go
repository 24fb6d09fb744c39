package deployed

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/netfilter"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// ruleDifferences lists where node n's policy routing rules, read through
// h (a handle in n's namespace), differ from the file's: a rule the file
// declares that the kernel lacks (Missing), and one the kernel has beyond
// the ones every namespace starts with (information). A node whose file
// gives no rule is not read (two dumps a node, in a lab of 10,000 nodes,
// for what the file cannot lack). It runs in the caller's namespace
// (through h). Equivalent to: ip -n NS rule show.
func ruleDifferences(h *netlink.Handle, n *spec.Node) ([]Difference, error) {
	if len(n.Rules) == 0 {
		return nil, nil
	}
	var live []*spec.Rule
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := nlsafe.RuleList(h, fam)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if !inspect.KernelRule(r) {
				live = append(live, specRule(r))
			}
		}
	}
	var out []Difference
	for _, fr := range n.Rules {
		if !slices.ContainsFunc(live, func(k *spec.Rule) bool { return sameRule(k, fr) }) {
			out = append(out, Difference{Node: n.Name, What: fmt.Sprintf("the file's rule %s is not in the kernel", ruleText(fr)), Missing: true})
		}
	}
	for _, k := range live {
		if !slices.ContainsFunc(n.Rules, func(fr *spec.Rule) bool { return sameRule(k, fr) }) {
			out = append(out, Difference{Node: n.Name, What: fmt.Sprintf("rule %s is in the kernel, not in the file", ruleText(k))})
		}
	}
	return out, nil
}

// specRule is a kernel rule in the file's terms.
func specRule(r netlink.Rule) *spec.Rule {
	out := &spec.Rule{IIF: r.IifName, OIF: r.OifName, Table: r.Table, Priority: r.Priority}
	if r.Src != nil {
		ones, _ := r.Src.Mask.Size()
		a, _ := netip.AddrFromSlice(r.Src.IP)
		out.From = netip.PrefixFrom(a.Unmap(), ones)
	}
	if r.Dst != nil {
		ones, _ := r.Dst.Mask.Size()
		a, _ := netip.AddrFromSlice(r.Dst.IP)
		out.To = netip.PrefixFrom(a.Unmap(), ones)
	}
	return out
}

// sameRule reports whether the kernel's rule k is the file's fr.
func sameRule(k, fr *spec.Rule) bool {
	return k.From == fr.From && k.To == fr.To && k.IIF == fr.IIF && k.OIF == fr.OIF && k.Table == fr.Table && k.Priority == fr.Priority
}

// ruleText says a rule as ip rule shows it.
func ruleText(r *spec.Rule) string {
	w := []string{fmt.Sprintf("%d:", r.Priority)}
	for _, p := range []struct {
		key string
		set bool
		val string
	}{{"from", r.From.IsValid(), r.From.String()}, {"to", r.To.IsValid(), r.To.String()}, {"iif", r.IIF != "", r.IIF}, {"oif", r.OIF != "", r.OIF}} {
		if p.set {
			w = append(w, p.key, p.val)
		}
	}
	if len(w) == 1 {
		w = append(w, "from all")
	}
	return strings.Join(append(w, "lookup", fmt.Sprint(r.Table)), " ")
}

// netfilterDifferences lists where node's nftables table (nslab's) differs
// from the file's NAT and firewall rules: the table, or a rule of the file
// (found by its comment, which names the lab and the rule's place in the
// file), that the kernel lacks (Missing); a rule of the table the file
// does not give (information: a variant's, or one added by hand). It
// runs in the caller's namespace (nftables through the node's namespace
// fd). Equivalent to: ip netns exec NS nft list table inet nslab.
func netfilterDifferences(node *Node, labName string, n *spec.Node) ([]Difference, error) {
	if !n.HasNetfilter() {
		return nil, nil // as for ruleDifferences: nothing the kernel could lack
	}
	want := n.RuleWords()
	_, rules, found, err := netfilter.Read(node.NS.Fd())
	if err != nil {
		return nil, err
	}
	if !found {
		return []Difference{{Node: n.Name, What: fmt.Sprintf("the file's NAT and firewall rules (table inet %s) are not in the kernel", netfilter.Table), Missing: true}}, nil
	}
	prefix := netfilter.Comment(labName, "")
	have := map[string]bool{}
	var out []Difference
	for _, r := range rules {
		path, ok := strings.CutPrefix(r.Comment, prefix)
		have[path] = ok
		if _, inFile := want[path]; !ok || !inFile {
			out = append(out, Difference{Node: n.Name, What: fmt.Sprintf("rule %q of chain %s is in the kernel, not in the file", r.Comment, r.Chain)})
		}
	}
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if !have[p] {
			out = append(out, Difference{Node: n.Name, What: fmt.Sprintf("the file's rule at %s (%s) is not in the kernel", p, want[p]), Missing: true})
		}
	}
	return out, nil
}
