package lab

import (
	"fmt"
	"sort"

	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// Link impairments: a root qdisc on each impaired interface's egress
// (package qdisc). It lives in the node's namespace and goes with it.

func impairSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			if i.Impair == nil {
				continue
			}
			steps = append(steps, Step{
				Name:  fmt.Sprintf("impair %s:%s (%s %s)", n.Name, i.Name, i.Impair.Qdisc(), i.Impair),
				Shell: func() []string { return []string{qdisc.Shell(l.Namespace(n.Name), i.Name, i.Impair, mtuOf(i))} },
				Do:    func(d *deployer) error { return d.impair(n, i) },
				Needs: []string{n.Name + ":" + i.Name},
				Undo:  func(d *deployer) error { return d.clearImpair(n, i) },
			})
		}
	}
	return steps
}

// mtuOf is the MTU an interface has once deployed: the file's, or the
// kernel's default for a veth.
func mtuOf(i *spec.Interface) int {
	if i.MTU > 0 {
		return i.MTU
	}
	return 1500
}

// impair sets interface i's impairment, through node n's handle.
//
// Equivalent to: tc -n NS qdisc replace dev IF root handle 1: netem|tbf ...
func (d *deployer) impair(n *spec.Node, i *spec.Interface) error {
	link, err := d.handles[n.Name].LinkByIndex(d.ifindex(n.Name, i.Name))
	if err != nil {
		return fmt.Errorf("find %s:%s: %w", n.Name, i.Name, err)
	}
	return qdisc.Set(d.handles[n.Name], link, i.Impair)
}

// checkQdiscs checks, in a scratch namespace, that the kernel has every
// qdisc the lab's impairments need, and names the first interface that
// needs each missing one.
func checkQdiscs(l *spec.Lab) []string {
	first := map[string]string{} // kind -> "nodes.N.interfaces.I.impair (what)"
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			if m := i.Impair; m != nil && first[m.Qdisc()] == "" {
				first[m.Qdisc()] = fmt.Sprintf("nodes.%s.interfaces.%s.impair (%s)", n.Name, i.Name, m)
			}
		}
	}
	kinds := make([]string, 0, len(first))
	for k := range first {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var problems []string
	for _, k := range kinds {
		if err := qdisc.Check(k); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", first[k], err))
		}
	}
	return problems
}
