package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

func pathCommand() *cli.Command {
	return &cli.Command{
		Name:      "path",
		Usage:     "show the hops a packet takes from a node to an address (confirmed by the kernel when deployed)",
		ArgsUsage: "[FILE] FROM TO   (FROM: NODE or NODE:IF; TO: an address, NODE or NODE:IF)",
		Flags: []cli.Flag{
			hostFlag(),
			topoFlag(),
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table or json"},
			&cli.StringFlag{Name: "proto", Usage: "the packet's protocol, for the NAT and firewall rules on the way: icmp, tcp or udp (default: an ICMP echo)"},
			&cli.IntFlag{Name: "port", Usage: "its destination port (tcp, udp)"},
		},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			path := c.String("topo")
			if path == "" && len(args) == 3 {
				path, args = args[0], args[1:]
			}
			if path == "" || len(args) != 2 {
				return cli.Exit("usage: nslab path -t FILE FROM TO (e.g. nslab path -t lab.yaml ns1 10.0.2.1)", 2)
			}
			whole, err := spec.ReadFile(path)
			if err != nil {
				return err
			}
			l, err := partOf(c, whole)
			if err != nil {
				return err
			}
			from, to, err := pathEnds(l.Model(), args[0], args[1])
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			flow, err := pathFlow(c.String("proto"), c.Int("port"))
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			tp, err := manager(c).Trace(l, from, to, flow)
			var kd *lab.KernelDisagrees
			if errors.As(err, &kd) {
				printPath(c.App.Writer, l.Model(), kd.Path)
				return err
			}
			if err != nil {
				return fmt.Errorf("%s cannot reach %s: %w", args[0], to, err)
			}
			switch c.String("format") {
			case "json":
				return writeJSON(c.App.Writer, tp)
			case "table":
				printPath(c.App.Writer, l.Model(), tp)
				return nil
			}
			return cli.Exit("--format is table or json", 2)
		},
	}
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
			for _, p := range i.Addresses {
				cands = append(cands, p.Addr())
			}
		}
	}
	for _, b := range n.Bridges {
		if ti == "" || b.Name == ti {
			for _, p := range b.Addresses {
				cands = append(cands, p.Addr())
			}
		}
	}
	for _, want4 := range []bool{true, false} {
		for _, a := range cands {
			if a.Is4() == want4 {
				return from, a, nil
			}
		}
	}
	return from, netip.Addr{}, fmt.Errorf("TO: %s has no address: give an address", toArg)
}

func nodeList(l *spec.Lab) string {
	var names []string
	for _, n := range l.Nodes {
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}

// printPath writes the path as a table: one row per node crossed.
func printPath(w io.Writer, l *spec.Lab, tp *lab.TracedPath) {
	how := "from the file (the lab is not deployed)"
	if tp.NotAsked != "" {
		how = "from the file (" + tp.NotAsked + ")"
	}
	if tp.Deployed {
		how = "the kernel's route lookup agrees at every hop"
		if tp.Elsewhere != "" {
			how = "the kernel's route lookup agrees at every hop on this host; " + tp.Elsewhere + " by the file (run nslab path there to ask its kernel)"
		}
	}
	src := ""
	if tp.Source.IsValid() {
		src = ", source " + tp.Source.String()
	}
	fmt.Fprintf(w, "%s -> %s (%s)%s: %s\n\n", tp.From, tp.To, tp.Dest, src, how)
	if tp.Local {
		fmt.Fprintf(w, "%s holds %s itself: delivered locally, no wire crossed\n", tp.From.Node, tp.To)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tIN\tOUT\tNEXT HOP\tNEXT-HOP MAC")
	dst := tp.To
	for _, h := range tp.Hops {
		in, out := orDash(h.In), orDash(h.Out)
		if h.DNAT.IsValid() {
			dst = h.DNAT.Addr()
		}
		switch {
		case h.L2:
			fmt.Fprintf(tw, "%s\t%s\t%s\tbridged (switch)\t\n", h.Node, in, out)
		case h.Out == "":
			fmt.Fprintf(tw, "%s\t%s\t%s\tdelivered (holds %s)\t\n", h.Node, in, out, dst)
		default:
			kind := "on-link"
			if h.Gateway {
				kind = "gateway"
			}
			mac := "(set by the NIC)"
			if h.NextMAC != nil {
				mac = h.NextMAC.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s (%s)\n", h.Node, in, out, h.Via, kind, mac, h.Next)
		}
	}
	tw.Flush()
	printRewrites(w, l, tp)
	routers := 0
	for _, h := range tp.Hops[1:] {
		if h.Out != "" && !h.L2 {
			routers++
		}
	}
	fmt.Fprintf(w, "\n%d IP hop(s) through %d router(s); the sender's frames carry destination MAC %s\n", routers+1, routers, macOr(tp, 0))
}

// printRewrites says where NAT rewrites the packet's addresses on the way.
func printRewrites(w io.Writer, l *spec.Lab, tp *lab.TracedPath) {
	for _, h := range tp.Hops {
		words := l.Node(h.Node).RuleWords()
		if h.DNAT.IsValid() {
			fmt.Fprintf(w, "%s rewrites the destination to %s as it arrives on %s (%s: %s)\n", h.Node, h.DNAT, h.In, h.DNATBy, words[h.DNATBy])
		}
		if h.SNAT.IsValid() {
			fmt.Fprintf(w, "%s rewrites the source to %s as it leaves by %s (%s: %s)\n", h.Node, h.SNAT, h.Out, h.SNATBy, words[h.SNATBy])
		}
	}
}

func macOr(tp *lab.TracedPath, i int) string {
	if tp.Hops[i].NextMAC == nil {
		return "(set by the NIC)"
	}
	return tp.Hops[i].NextMAC.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
