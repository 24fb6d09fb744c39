package lab

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// Per-node settings that need the node's interfaces to exist: IPv6 back on
// for interfaces with IPv6 addresses, and the user's per-interface sysctls.

func nodeSettingSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		kvs := interfaceSysctls(n)
		if len(kvs) == 0 {
			continue
		}
		var what []string
		for _, s := range kvs {
			what = append(what, s.Key+"="+s.Value)
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("configure node %s: %s", n.Name, strings.Join(what, ", ")),
			Shell: func() []string { return []string{shSysctls(l.Namespace(n.Name), kvs)} },
			Do:    func(d *deployer) error { return d.configureNode(n, kvs) },
			Needs: []string{n.Name + ":*"},
			// Written again by the file's next version; those of a
			// removed interface go with it.
			NoUndo: true,
		})
	}
	return steps
}

// interfaceSysctls is what configureNode writes for node n, in order.
func interfaceSysctls(n *spec.Node) []spec.Sysctl {
	var out []spec.Sysctl
	if keepsIPv6(n) {
		// Interfaces its exec lines make get IPv6 too.
		out = append(out, spec.Sysctl{Key: "net.ipv6.conf.default.disable_ipv6", Value: "0"})
	}
	for _, name := range ipv6Interfaces(n) {
		key := "net.ipv6.conf." + strings.ReplaceAll(name, ".", "/") + ".disable_ipv6"
		out = append(out, spec.Sysctl{Key: key, Value: "0"})
	}
	for _, s := range n.Sysctls {
		if s.Interface() != "" {
			out = append(out, s)
		}
	}
	return out
}

// ipv6Interfaces lists the interfaces and bridges of n that get IPv6
// enabled (see ipv6Defaults): those with an IPv6 address in the file, and
// every one of a node whose daemons or exec lines may add addresses (see
// keepsIPv6). A sysctl in the file (disable_ipv6 of an interface) has the
// last word.
func ipv6Interfaces(n *spec.Node) []string {
	all := keepsIPv6(n)
	var out []string
	for _, i := range n.Interfaces {
		if i.Kind != spec.KindLoopback && (all || i.HasIPv6()) {
			out = append(out, i.Name)
		}
	}
	for _, b := range n.Bridges {
		if all || b.HasIPv6() {
			out = append(out, b.Name)
		}
	}
	return out
}

// keepsIPv6 reports whether node n keeps IPv6 on every interface: it runs
// routing daemons, exec lines, startup scripts or services, any of which may give its
// interfaces IPv6 addresses (an ipv6 address line of frr.conf, an ip -6
// addr add) that the file does not list.
func keepsIPv6(n *spec.Node) bool {
	return n.RunsRouting() || len(n.Exec) > 0 || len(n.Run) > 0 || len(n.Startup) > 0
}

// configureNode writes kvs in node n, from a thread inside its namespace.
//
// Equivalent to: ip netns exec NS sysctl -w KEY=VALUE ...
func (d *deployer) configureNode(n *spec.Node, kvs []spec.Sysctl) error {
	write := func() error {
		for _, s := range kvs {
			if err := writeSysctl(s.ProcPath(), s.Value, false); err != nil {
				return fmt.Errorf("in %s: %w", n.Name, err)
			}
		}
		return nil
	}
	return d.inNS(n.Name, func(x *ns.NS) error { return d.procWriter().DoIn(x, write) }) // see ns.ProcWriter
}

// writeSysctl writes one /proc/sys value in the calling thread's namespace.
// optional: a missing file (IPv6 compiled out) is not an error.
func writeSysctl(path, val string, optional bool) error {
	err := os.WriteFile(path, []byte(val), 0)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrNotExist) {
		if optional {
			return nil
		}
		return fmt.Errorf("set %s = %s: no such sysctl in this namespace (is the key right, and does the kernel have it?)", path, val)
	}
	return fmt.Errorf("set %s = %s: %w", path, val, err)
}
