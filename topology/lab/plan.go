package lab

import (
	"fmt"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// Step is one named kernel change of a deploy. The plan is the ordered list
// of steps; it can be printed (nslab deploy --dry-run) before anything runs.
type Step struct {
	Name  string
	shell func() []string // the same change as iproute2/sysctl commands (see DeployScript)
	do    func(d *deployer) error
}

// Shell returns the step as iproute2/sysctl commands (see DeployScript).
func (s Step) Shell() []string { return s.shell() }

// Plan returns the steps that deploy lab, in order: namespaces, veth pairs,
// bridges, per-node settings (IPv6, forwarding, sysctls), addresses, routes.
func Plan(lab *spec.Lab) []Step { return planFor(lab, "") }

// planFor is Plan with the sysfs root the SR-IOV steps' shell lines name.
func planFor(lab *spec.Lab, sysfs string) []Step {
	var steps []Step
	for _, n := range lab.Nodes {
		what := "lo up"
		if s := strings.Join(namespaceSysctls(n), ", "); s != "" {
			what += ", " + s
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("create namespace %s (node %s: %s)", lab.Namespace(n.Name), n.Name, what),
			shell: func() []string { return shNamespace(lab, n) },
			do:    func(d *deployer) error { return d.createNamespace(n) },
		})
	}
	for _, pf := range lab.SRIOV {
		steps = append(steps, Step{
			Name:  fmt.Sprintf("make sure PF %s has %d VFs", pf.Name, pf.NumVFs),
			shell: func() []string { return shPF(pf, sysfs) },
			do:    func(d *deployer) error { return d.preparePF(pf) },
		})
		for _, vf := range pf.VFs {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("hand VF %d of %s to %s as %s", vf.Index, pf.Name, vf.Node, vf.Name),
				shell: func() []string { return shVF(lab, pf, vf, sysfs) },
				do:    func(d *deployer) error { return d.handVF(pf, vf) },
			})
		}
	}
	for _, l := range lab.Links {
		steps = append(steps, Step{
			Name:  fmt.Sprintf("create veth pair %s <-> %s", l.A, l.B),
			shell: func() []string { return shVeth(lab, l) },
			do:    func(d *deployer) error { return d.createVeth(l) },
		})
	}
	for _, n := range lab.Nodes {
		for _, b := range n.Bridges {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("create bridge %s:%s with ports %s", n.Name, b.Name, strings.Join(b.Ports, ", ")),
				shell: func() []string { return shBridge(lab, n, b) },
				do:    func(d *deployer) error { return d.createBridge(n, b) },
			})
		}
	}
	for _, n := range lab.Nodes {
		if what := nodeSettings(n); what != "" {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("configure node %s: %s", n.Name, what),
				shell: func() []string { return shNodeSettings(lab, n) },
				do:    func(d *deployer) error { return d.configureNode(n) },
			})
		}
	}
	for _, n := range lab.Nodes {
		for _, i := range n.Interfaces {
			for _, a := range i.Addresses {
				steps = append(steps, Step{
					Name:  fmt.Sprintf("add address %s to %s:%s", a, n.Name, i.Name),
					shell: func() []string { return []string{shAddress(lab, n, i.Name, a)} },
					do:    func(d *deployer) error { return d.addAddress(n, i.Name, a) },
				})
			}
		}
		for _, b := range n.Bridges {
			for _, a := range b.Addresses {
				steps = append(steps, Step{
					Name:  fmt.Sprintf("add address %s to %s:%s", a, n.Name, b.Name),
					shell: func() []string { return []string{shAddress(lab, n, b.Name, a)} },
					do:    func(d *deployer) error { return d.addAddress(n, b.Name, a) },
				})
			}
		}
	}
	if len(lab.Links) > 0 || hasBridges(lab) {
		steps = append(steps, Step{
			Name:  "wait until every lab interface is operationally up",
			shell: func() []string { return shWaitUp(lab) },
			do:    func(d *deployer) error { return d.waitLinksUp() },
		})
	}
	for _, n := range lab.Nodes {
		for _, r := range n.Routes {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("add route %s in %s", r, n.Name),
				shell: func() []string { return []string{shRoute(lab, n, r)} },
				do:    func(d *deployer) error { return d.addRoute(n, r) },
			})
		}
	}
	return steps
}

// nodeSettings describes the per-node settings that need the node's
// interfaces to exist (IPv6 on interfaces with IPv6 addresses, per-interface
// sysctls), or "" when there are none.
func nodeSettings(n *spec.Node) string {
	var parts []string
	if v6 := ipv6Interfaces(n); len(v6) > 0 {
		parts = append(parts, "ipv6 on "+strings.Join(v6, ", "))
	}
	for _, s := range n.Sysctls {
		if s.Interface() != "" {
			parts = append(parts, s.Key+"="+s.Value)
		}
	}
	return strings.Join(parts, ", ")
}

// namespaceSysctls lists, as KEY=VALUE, the namespace-wide settings of a node
// that are written when its namespace is created: forwarding, then the
// user's sysctls that are not about one interface (so they win). Devices
// created later inherit forwarding from the namespace's default entries.
func namespaceSysctls(n *spec.Node) []string {
	var out []string
	if n.Forwarding.IPv4 {
		out = append(out, "net.ipv4.ip_forward=1")
	}
	if n.Forwarding.IPv6 {
		out = append(out, "net.ipv6.conf.all.forwarding=1")
	}
	for _, s := range n.Sysctls {
		if s.Interface() == "" {
			out = append(out, s.Key+"="+s.Value)
		}
	}
	return out
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

func hasBridges(lab *spec.Lab) bool {
	for _, n := range lab.Nodes {
		if len(n.Bridges) > 0 {
			return true
		}
	}
	return false
}
