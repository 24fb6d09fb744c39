package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// pathOptions is nslab path: this host's part of the lab, the sender
// and the destination, and the packet (an ICMP echo, or Flow).
type pathOptions struct {
	Lab     *spec.Lab
	Manager *lab.Manager
	From    spec.Endpoint
	FromArg string // as given, for messages
	ToArg   string
	To      netip.Addr // invalid: ToArg names a node the file gives no address (see runPath)
	Flow    spec.Flow
	Format  string // table or json
	Out     io.Writer
}

func pathCommand(run func(context.Context, *pathOptions) error) *cli.Command {
	flags := []cli.Flag{
		hostFlag(),
		topoFlag(),
		prefixFlag(),
		asDeployedFlag(),
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table or json"},
		&cli.StringFlag{Name: "proto", Usage: "the packet's protocol, for the NAT and firewall rules on the way: icmp, tcp or udp (default: an ICMP echo)"},
		&cli.IntFlag{Name: "port", Usage: "its destination port (tcp, udp)"},
	}
	return command("path", "show the hops a packet takes from a node to an address (confirmed by the kernel when deployed)", "[FILE] FROM TO   (FROM: NODE or NODE:IF; TO: an address, NODE or NODE:IF)", flags, readPath, run, runPath)
}

func readPath(c *cli.Context) (*pathOptions, error) {
	args := c.Args().Slice()
	path := c.String("topo")
	if path == "" && len(args) == 3 {
		path, args = args[0], args[1:]
	}
	if path == "" || len(args) != 2 {
		return nil, cli.Exit("usage: nslab path -t FILE FROM TO (e.g. nslab path -t lab.yaml ns1 10.0.2.1)", 2)
	}
	if f := c.String("format"); f != "table" && f != "json" {
		return nil, cli.Exit("--format is table or json", 2)
	}
	whole, err := spec.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := applyPrefix(c, manager(c), whole); err != nil {
		return nil, err
	}
	l, err := partOf(c, whole)
	if err != nil {
		return nil, err
	}
	m := manager(c)
	if l, err = deployedLab(c, m, l); err != nil {
		return nil, err
	}
	o := &pathOptions{Lab: l, Manager: m, FromArg: args[0], ToArg: args[1], Format: c.String("format"), Out: screen(c)}
	if o.From, o.To, err = pathEnds(l.Model(), args[0], args[1]); err != nil && !errors.As(err, new(noAddressError)) {
		return nil, cli.Exit(err.Error(), 2)
	}
	if o.Flow, err = pathFlow(c.String("proto"), c.Int("port")); err != nil {
		return nil, cli.Exit(err.Error(), 2)
	}
	return o, nil
}

// runPath traces the path (by the kernels where the lab is deployed) and
// writes it. Where the kernel's own route lookup disagrees with the walk,
// it writes the path with the disagreements, and fails.
func runPath(_ context.Context, o *pathOptions) error {
	if !o.To.IsValid() {
		if err := o.resolveTo(); err != nil {
			return err
		}
	}
	tp, err := o.Manager.Store().Trace(o.Lab, o.From, o.To, o.Flow)
	var kd *deployed.KernelDisagrees
	if errors.As(err, &kd) {
		tp = kd.Path
	} else if err != nil {
		return fmt.Errorf("%s cannot reach %s: %w", o.FromArg, o.To, err)
	}
	if o.Format == "json" {
		err = writeJSON(o.Out, tp)
	} else {
		tp.WriteTable(o.Out, o.Lab.Model())
	}
	if err == nil && kd != nil {
		return cli.Exit("", 1) // the disagreements are said with the path
	}
	return err
}

// resolveTo finds TO's address in the deployed lab's kernel, for a node
// (or interface) the file gives none: exec lines and daemons address
// nodes too.
func (o *pathOptions) resolveTo() error {
	r, err := o.Manager.Open(o.Lab)
	if err != nil {
		return fmt.Errorf("TO: %s has no address in the file, and the lab is not deployed here to ask its kernel: give an address", o.ToArg)
	}
	defer r.Close()
	if err := r.Learn(); err != nil {
		return err
	}
	if _, o.To, err = pathEnds(o.Lab.Model(), o.FromArg, o.ToArg); err != nil {
		return cli.Exit(err.Error(), 2)
	}
	return nil
}

// pathFlow is the packet --proto and --port describe.
func pathFlow(proto string, port int) (spec.Flow, error) {
	switch {
	case proto == "" && port == 0, proto == "icmp" && port == 0:
		return spec.Flow{}, nil
	case proto != "tcp" && proto != "udp":
		return spec.Flow{}, fmt.Errorf("--proto is icmp, tcp or udp (--port needs tcp or udp), not %q", proto)
	case port < 1 || port > 65535:
		return spec.Flow{}, fmt.Errorf("--proto %s needs --port from 1 to 65535", proto)
	}
	return spec.Flow{Proto: proto, Port: port}, nil
}

// pathEnds resolves FROM (NODE or NODE:IF) and TO (an address, or NODE or
// NODE:IF standing for its first address, IPv4 first).
func pathEnds(l *spec.Lab, fromArg, toArg string) (spec.Endpoint, netip.Addr, error) {
	from, err := spec.ParseEndpoint(fromArg)
	if err != nil {
		return from, netip.Addr{}, fmt.Errorf("FROM: %w", err)
	}
	if l.Node(from.Node) == nil {
		return spec.Endpoint{}, netip.Addr{}, fmt.Errorf("FROM: node %q is not in lab %s (nodes: %s)", from.Node, l.Name, nodeList(l))
	}
	if a, err := netip.ParseAddr(toArg); err == nil {
		return from, a, nil
	}
	to, err := spec.ParseEndpoint(toArg)
	if err != nil {
		return from, netip.Addr{}, fmt.Errorf("TO: %w", err)
	}
	tn, ti := to.Node, to.Interface
	n := l.Node(tn)
	if n == nil {
		return from, netip.Addr{}, fmt.Errorf("TO: %q is neither an address nor a node of lab %s (nodes: %s)", toArg, l.Name, nodeList(l))
	}
	var cands []netip.Addr
	for _, i := range n.Interfaces {
		if ti == "" || i.Name == ti {
			for _, p := range i.Addrs() {
				cands = append(cands, p.Addr())
			}
		}
	}
	for _, b := range n.Bridges {
		if ti == "" || b.Name == ti {
			for _, p := range b.Addrs() {
				cands = append(cands, p.Addr())
			}
		}
	}
	for _, want4 := range []bool{true, false} {
		for _, a := range cands {
			if a.Is4() == want4 && !a.IsLinkLocalUnicast() && !a.IsLoopback() {
				return from, a, nil
			}
		}
	}
	return from, netip.Addr{}, noAddressError(toArg)
}

// noAddressError is a TO that names a node or interface without an
// address (in the file, or in the kernel once read).
type noAddressError string

func (e noAddressError) Error() string {
	return fmt.Sprintf("TO: %s has no address: give an address", string(e))
}

func nodeList(l *spec.Lab) string {
	var names []string
	for _, n := range l.Nodes {
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}
