package lab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// One namespace per node, marked, lo up, IPv6 off by default, and the
// node's namespace-wide sysctls (forwarding first).

func namespaceSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		what := []string{"lo up"}
		for _, s := range namespaceSysctls(n) {
			what = append(what, s.Key+"="+s.Value)
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("create namespace %s (node %s: %s)", l.Namespace(n.Name), n.Name, strings.Join(what, ", ")),
			Shell: func() []string { return shNamespace(l, n) },
			Do:    func(d *deployer) error { return d.createNamespace(n) },
			Makes: []string{n.Name},
			Undo:  func(d *deployer) error { return d.removeNode(n.Name) },
		})
	}
	return steps
}

// loIndex is the ifindex of the loopback in every new network namespace.
const loIndex = deployed.LoIndex

// ipv6Defaults are written in every new namespace before any of its
// interfaces exist, so the interfaces inherit them. IPv6 is off by default:
// lab links then come up without autoconfiguration noise; interfaces with
// IPv6 addresses get it back (step_node.go). Where it is on, no address is
// tentative (no DAD, the link-local address included: the kernel skips DAD
// only when both "all" and the interface say so), so routed IPv6 answers
// the moment deploy returns, and no node sends router solicitations (it
// still accepts advertisements from a router the lab runs). Addresses
// survive a link taken down.
var ipv6Defaults = []spec.Sysctl{
	{Key: "net.ipv6.conf.default.disable_ipv6", Value: "1"},
	{Key: "net.ipv6.conf.all.accept_dad", Value: "0"},
	{Key: "net.ipv6.conf.default.accept_dad", Value: "0"},
	{Key: "net.ipv6.conf.default.router_solicitations", Value: "0"},
	// A link taken down (nslab link down) keeps its IPv6 addresses, as
	// its IPv4 ones, so bringing it up restores it.
	{Key: "net.ipv6.conf.all.keep_addr_on_down", Value: "1"},
	{Key: "net.ipv6.conf.default.keep_addr_on_down", Value: "1"},
}

// namespaceSysctls lists the namespace-wide settings of a node that are
// written when its namespace is created: forwarding, then the user's
// sysctls that are not about one interface (so they win). Devices created
// later inherit forwarding from the namespace's default entries.
func namespaceSysctls(n *spec.Node) []spec.Sysctl {
	var out []spec.Sysctl
	if n.Forwarding.IPv4 {
		out = append(out, spec.Sysctl{Key: "net.ipv4.ip_forward", Value: "1"})
	}
	if n.Forwarding.IPv6 {
		out = append(out, spec.Sysctl{Key: "net.ipv6.conf.all.forwarding", Value: "1"})
	}
	for _, s := range n.Sysctls {
		if s.Interface() == "" {
			out = append(out, s)
		}
	}
	return out
}

// createNamespace makes node n's namespace. Inside it, before it gets its
// name, the creator thread opens the node's netlink handle, marks and brings
// up lo, writes the IPv6 defaults and the namespace-wide sysctls.
//
// Equivalent to: ip netns add NS; ip -n NS link set lo up alias nslab:LAB:NODE;
// ip netns exec NS sysctl -w [ipv6Defaults] [forwarding, sysctls]
func (d *deployer) createNamespace(n *spec.Node) error {
	if d.nsMade == nil && len(d.nsAhead) > 0 {
		d.nsMade = map[string]error{}
		if err := d.startCreator(); err != nil {
			return err
		}
		for chunk := range slices.Chunk(d.nsAhead, nsChunk) {
			if !d.createChunk(chunk) {
				break
			}
		}
	}
	if err, ok := d.nsMade[n.Name]; ok {
		return err
	}
	return d.createOne(n)
}

// startCreator starts the deploy's namespace creator, at first use.
func (d *deployer) startCreator() error {
	if d.creator == nil {
		c, err := ns.NewCreator(d.m.netnsDir())
		if err != nil {
			return err
		}
		d.creator = c
	}
	return nil
}

// nsChunk is how many namespaces createChunk makes at once: each is open
// until its sysctls are written, besides its netlink handle, and a deploy
// raises its limit of open files by one per node (see ensureFiles).
const nsChunk = 128

// createChunk makes the namespaces of nodes in one request to the
// creator's thread, then writes their sysctls in one request to the proc
// writer's: two thread switches for the chunk instead of four per
// namespace (a fifth of a deploy's time at 1,000 nodes). It records each
// node's result in d.nsMade, and reports whether all of them were made.
func (d *deployer) createChunk(nodes []*spec.Node) bool {
	names, setups := make([]string, len(nodes)), make([]func() error, len(nodes))
	hs := make([]*netlink.Handle, len(nodes))
	for i, n := range nodes {
		names[i] = d.lab.Namespace(n.Name)
		setups[i] = func() error {
			var err error
			if hs[i], err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
				return fmt.Errorf("netlink socket: %w", err)
			}
			return markLo(hs[i], d.lab.Name, n)
		}
	}
	made, err := d.creator.CreateAll(names, setups)
	var jobs []ns.ProcJob
	for i, x := range made {
		n := nodes[i]
		d.created = append(d.created, x.Name)
		d.handles[n.Name] = hs[i]
		d.inodes[n.Name], _ = x.Inode()
		d.index[spec.Endpoint{Node: n.Name, Interface: "lo"}] = loIndex
		jobs = append(jobs, ns.ProcJob{FD: x.Fd(), Name: x.Name, Fn: func() error { return writeNamespaceSysctls(n) }})
	}
	if err != nil {
		if h := hs[len(made)]; h != nil {
			h.Close()
		}
		d.nsMade[nodes[len(made)].Name] = err
	}
	done, perr := d.procWriter().DoAll(jobs)
	for _, x := range made {
		x.Close() // opened again by name when a step needs it (see inNS)
	}
	for i := range made {
		switch {
		case i < done:
			d.nsMade[nodes[i].Name] = nil
			d.made(nodes[i].Name)
		case i == done:
			d.nsMade[nodes[i].Name] = fmt.Errorf("set up namespace %s: %w", made[i].Name, perr)
		}
	}
	return err == nil && perr == nil
}

// createOne makes node n's namespace alone (see createNamespace).
func (d *deployer) createOne(n *spec.Node) error {
	if err := d.startCreator(); err != nil {
		return err
	}
	proc := d.procWriter()
	var h *netlink.Handle
	nsh, err := d.creator.Create(d.lab.Namespace(n.Name), func() error {
		var err error
		if h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			return fmt.Errorf("netlink socket: %w", err)
		}
		return setUpNamespace(h, proc, d.lab.Name, n)
	})
	if err != nil {
		if h != nil {
			h.Close()
		}
		return err
	}
	d.created = append(d.created, nsh.Name)
	d.handles[n.Name] = h
	d.inodes[n.Name], _ = nsh.Inode()
	nsh.Close() // opened again by name when a step needs it (see inNS)
	d.index[spec.Endpoint{Node: n.Name, Interface: "lo"}] = loIndex
	return nil
}

// setUpNamespace runs on the creator thread inside the new namespace; the
// sysctls are written by proc in the same namespace.
func setUpNamespace(h *netlink.Handle, proc *ns.ProcWriter, labName string, n *spec.Node) error {
	if err := markLo(h, labName, n); err != nil {
		return err
	}
	here, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the new namespace: %w", err)
	}
	defer unix.Close(here)
	return proc.Do(here, n.Name, func() error { return writeNamespaceSysctls(n) })
}

// markLo marks node n's lo with the lab's marker and brings it up, through
// h, a handle in n's namespace.
func markLo(h *netlink.Handle, labName string, n *spec.Node) error {
	lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: loIndex, Name: "lo"}}
	if err := h.LinkSetAlias(lo, nsMarker(labName, n.Name)); err != nil {
		return fmt.Errorf("mark lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

// writeNamespaceSysctls writes the IPv6 defaults and n's namespace-wide
// sysctls; it runs on the proc writer's thread, in n's namespace.
func writeNamespaceSysctls(n *spec.Node) error {
	for _, s := range ipv6Defaults {
		if err := writeSysctl(s.ProcPath(), s.Value, true); err != nil {
			return err
		}
	}
	for _, s := range namespaceSysctls(n) {
		if err := writeSysctl(s.ProcPath(), s.Value, false); err != nil {
			return err
		}
	}
	return nil
}

func shNamespace(l *spec.Lab, n *spec.Node) []string {
	name := l.Namespace(n.Name)
	out := []string{
		"ip netns add " + name,
		fmt.Sprintf("ip -n %s link set dev lo alias %s", name, nsMarker(l.Name, n.Name)),
		fmt.Sprintf("ip -n %s link set dev lo up", name),
		// -e: a kernel without IPv6 has no such keys, which nslab ignores too
		strings.Replace(shSysctls(name, ipv6Defaults), "sysctl -qw", "sysctl -qew", 1),
	}
	if kvs := namespaceSysctls(n); len(kvs) > 0 {
		out = append(out, shSysctls(name, kvs))
	}
	return out
}

// shSysctls is one `ip netns exec NS sysctl -qw K=V ...` line.
func shSysctls(nsName string, kvs []spec.Sysctl) string {
	words := make([]string, len(kvs))
	for i, s := range kvs {
		words[i] = ShellQuote(s.Key + "=" + s.Value)
	}
	return fmt.Sprintf("ip netns exec %s sysctl -qw %s", nsName, strings.Join(words, " "))
}
