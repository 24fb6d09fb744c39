package lab

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// Link impairments: a root qdisc on each impaired interface's egress
// (package qdisc). It lives in the node's namespace and goes with it.

func impairSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			if i.Impair == nil && i.Queue == nil {
				continue
			}
			steps = append(steps, Step{
				Name:  egressName(n, i),
				Shell: func() []string { return qdisc.ShellTree(l.Namespace(n.Name), i.Name, i.Impair, i.Queue, mtuOf(i)) },
				Do:    func(d *deployer) error { return d.impair(n, i) },
				Needs: []string{n.Name + ":" + i.Name},
				Undo:  func(d *deployer) error { return d.clearImpair(n, i) },
			})
		}
	}
	return steps
}

// egressName names the step that sets interface i's impairment and
// queue.
func egressName(n *spec.Node, i *spec.Interface) string {
	var what []string
	if m := i.Impair; m != nil {
		what = append(what, fmt.Sprintf("%s %s", m.Qdisc(), m))
	}
	if q := i.Queue; q != nil {
		what = append(what, "queue "+q.String())
	}
	verb := "impair"
	if i.Impair == nil {
		verb = "queue"
	}
	return fmt.Sprintf("%s %s:%s (%s)", verb, n.Name, i.Name, strings.Join(what, ", "))
}

// mtuOf is the MTU an interface has once deployed: the file's, or the
// kernel's default for a veth.
func mtuOf(i *spec.Interface) int {
	if i.MTU > 0 {
		return i.MTU
	}
	return 1500
}

// impair sets interface i's impairment and queue, through node n's
// handle (and, for a raw queue message, a thread in its namespace).
//
// Equivalent to: tc -n NS qdisc replace dev IF root handle 1: netem|tbf ...
// and tc -n NS qdisc add dev IF parent 1:1 handle 10: KIND ... (or root).
func (d *deployer) impair(n *spec.Node, i *spec.Interface) error {
	link, err := d.handles[n.Name].LinkByIndex(d.ifindex(n.Name, i.Name))
	if err != nil {
		return fmt.Errorf("find %s:%s: %w", n.Name, i.Name, err)
	}
	return d.inNS(n.Name, func(x *ns.NS) error { return qdisc.SetTree(x.Do, d.handles[n.Name], link, i.Impair, i.Queue) })
}

// checkQdiscs checks, in a scratch namespace, that the kernel has every
// qdisc the lab's impairments need, and names the first interface that
// needs each missing one.
func checkQdiscs(l *spec.Lab) []string {
	first := map[string]string{} // kind -> "nodes.N.interfaces.I.impair (what)"
	queues := map[string]bool{}
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			if m := i.Impair; m != nil && first[m.Qdisc()] == "" {
				first[m.Qdisc()] = fmt.Sprintf("nodes.%s.interfaces.%s.impair (%s)", n.Name, i.Name, m)
			}
			if q := i.Queue; q != nil && first[q.Kind] == "" {
				first[q.Kind], queues[q.Kind] = fmt.Sprintf("nodes.%s.interfaces.%s.qdisc (%s)", n.Name, i.Name, q), true
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
		check := qdisc.Check
		if queues[k] {
			check = qdisc.CheckQueue
		}
		if err := check(k); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", first[k], err))
		}
	}
	return problems
}
