package lab

import (
	"fmt"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// Step is one named kernel change of a deploy. The plan is the ordered list
// of steps; it can be printed (nslab deploy --dry-run) before anything runs.
type Step struct {
	Name string
	do   func(d *deployer) error
}

// Plan returns the steps that deploy lab, in order: namespaces, veth pairs,
// bridges, per-node settings (IPv6, forwarding, sysctls), addresses, routes.
func Plan(lab *spec.Lab) []Step {
	var steps []Step
	for _, n := range lab.Nodes {
		steps = append(steps, Step{
			Name: fmt.Sprintf("create namespace %s (node %s, lo up)", lab.Namespace(n.Name), n.Name),
			do:   func(d *deployer) error { return d.createNamespace(n) },
		})
	}
	for _, l := range lab.Links {
		steps = append(steps, Step{
			Name: fmt.Sprintf("create veth pair %s <-> %s", l.A, l.B),
			do:   func(d *deployer) error { return d.createVeth(l) },
		})
	}
	for _, n := range lab.Nodes {
		for _, b := range n.Bridges {
			steps = append(steps, Step{
				Name: fmt.Sprintf("create bridge %s:%s with ports %s", n.Name, b.Name, strings.Join(b.Ports, ", ")),
				do:   func(d *deployer) error { return d.createBridge(n, b) },
			})
		}
	}
	for _, n := range lab.Nodes {
		if what := nodeSettings(n); what != "" {
			steps = append(steps, Step{
				Name: fmt.Sprintf("configure node %s: %s", n.Name, what),
				do:   func(d *deployer) error { return d.configureNode(n) },
			})
		}
	}
	for _, n := range lab.Nodes {
		for _, i := range n.Interfaces {
			for _, a := range i.Addresses {
				steps = append(steps, Step{
					Name: fmt.Sprintf("add address %s to %s:%s", a, n.Name, i.Name),
					do:   func(d *deployer) error { return d.addAddress(n, i.Name, a) },
				})
			}
		}
		for _, b := range n.Bridges {
			for _, a := range b.Addresses {
				steps = append(steps, Step{
					Name: fmt.Sprintf("add address %s to %s:%s", a, n.Name, b.Name),
					do:   func(d *deployer) error { return d.addAddress(n, b.Name, a) },
				})
			}
		}
	}
	for _, n := range lab.Nodes {
		for _, r := range n.Routes {
			steps = append(steps, Step{
				Name: fmt.Sprintf("add route %s in %s", r, n.Name),
				do:   func(d *deployer) error { return d.addRoute(n, r) },
			})
		}
	}
	return steps
}

// nodeSettings describes the per-node settings step, or "" when none is needed.
func nodeSettings(n *spec.Node) string {
	var parts []string
	if v6 := ipv6Interfaces(n); len(v6) > 0 {
		parts = append(parts, "ipv6 on "+strings.Join(v6, ", "))
	}
	if n.Forwarding.IPv4 {
		parts = append(parts, "ipv4 forwarding")
	}
	if n.Forwarding.IPv6 {
		parts = append(parts, "ipv6 forwarding")
	}
	for _, s := range n.Sysctls {
		parts = append(parts, s.Key+"="+s.Value)
	}
	return strings.Join(parts, ", ")
}

// ipv6Interfaces lists the interfaces and bridges of n that have an IPv6
// address: only these get IPv6 enabled (see deployer.createNamespace).
func ipv6Interfaces(n *spec.Node) []string {
	var out []string
	for _, i := range n.Interfaces {
		if i.Name != "lo" && i.HasIPv6() {
			out = append(out, i.Name)
		}
	}
	for _, b := range n.Bridges {
		if b.HasIPv6() {
			out = append(out, b.Name)
		}
	}
	return out
}
