package lab

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/topology/netfilter"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// NAT and firewall: one nftables table per node that has rules (package
// netfilter). It lives in the node's namespace and goes with it.

func netfilterSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		if !n.HasNetfilter() {
			continue
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("nftables table inet %s in %s (%s)", netfilter.Table, n.Name, netfilter.Describe(n)),
			Shell: func() []string { return netfilter.Shell(l.Namespace(n.Name), l.Name, n) },
			Do: func(d *deployer) error {
				return d.inNS(n.Name, func(x *ns.NS) error { return netfilter.Apply(x.Fd(), l.Name, n) })
			},
			Needs: []string{n.Name},
			Undo: func(d *deployer) error {
				return d.inNS(n.Name, func(x *ns.NS) error { return netfilter.Remove(x.Fd()) })
			},
		})
	}
	return steps
}

// withoutFlowtable is a copy of n with no flowtable.
func withoutFlowtable(n *spec.Node) *spec.Node {
	c := *n
	c.Flowtable = false
	return &c
}

// checkNetfilter asks the kernel, in a scratch namespace, whether it can
// hold each node's table, before anything is changed.
func checkNetfilter(l *spec.Lab) []string {
	var problems []string
	for _, n := range l.Nodes {
		if !n.HasNetfilter() {
			continue
		}
		if err := netfilter.Check(l.Name, n); err != nil {
			if n.Flowtable && netfilter.Check(l.Name, withoutFlowtable(n)) == nil {
				problems = append(problems, fmt.Sprintf("nodes.%s.flowtable: this kernel has no nftables flowtable: it needs CONFIG_NF_FLOW_TABLE, CONFIG_NF_FLOW_TABLE_INET and CONFIG_NFT_FLOW_OFFLOAD (%s): %v; leave flowtable out, or run on a kernel that has them",
					n.Name, host.ConfigSays("CONFIG_NF_FLOW_TABLE", host.KernelConfig("CONFIG_NF_FLOW_TABLE")), strings.ReplaceAll(err.Error(), "\n", "; ")))
				continue
			}
			if !missingFeature(err) {
				problems = append(problems, fmt.Sprintf("nodes.%s (nat, firewall): the kernel refused the table: %v", n.Name, err))
				continue
			}
			problems = append(problems, fmt.Sprintf("nodes.%s (nat, firewall): this kernel cannot hold the rules (needs CONFIG_NF_TABLES, CONFIG_NF_TABLES_INET, CONFIG_NFT_NAT, CONFIG_NFT_MASQ, CONFIG_NFT_CT): %v", n.Name, err))
			break // one node says it for all
		}
	}
	return problems
}

// missingFeature says whether nftables' error is the kernel lacking what
// the table uses (the family, an expression: not built in, or no module),
// as opposed to refusing this table for another reason.
func missingFeature(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EPROTONOSUPPORT)
}
