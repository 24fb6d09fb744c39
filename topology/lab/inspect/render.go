package inspect

// What inspect prints: a deployed lab as tables, and the list of labs.

import (
	"cmp"
	"fmt"
	"github.com/nslab/nslab/topology/spec"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteSummaries writes the list of labs as a table (inspect without a lab).
func WriteSummaries(w io.Writer, labs []Summary) {
	if len(labs) == 0 {
		fmt.Fprintln(w, "no labs deployed")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAB\tPHASE\tNODES\tDEPLOYED\tFILE")
	for _, l := range labs {
		when := "-"
		if !l.Deployed.IsZero() {
			when = l.Deployed.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", l.Lab, l.Phase, l.Nodes, when, l.File)
	}
	tw.Flush()
}

// WriteTable writes a deployed lab as inspect prints it: its interfaces,
// queues, impairments, netfilter rules, services, routes and rules.
func (info *LabInfo) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "lab %s (%s", info.Lab, info.Phase)
	if !info.Deployed.IsZero() {
		fmt.Fprintf(w, " %s", info.Deployed.Local().Format(time.DateTime))
	}
	fmt.Fprintf(w, ", from %s)\n\n", info.File)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tNAMESPACE\tINTERFACE\tKIND\tPEER\tMAC\tMTU\tSTATE\tADDRESSES")
	for _, n := range info.Nodes {
		if !n.Present || n.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\tMISSING\t%s\n", n.Node, n.Namespace, n.Error)
			continue
		}
		for _, i := range n.Interfaces {
			kind := i.Kind
			if i.Master != "" {
				kind += " (port of " + i.Master + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", n.Node, n.Namespace, i.Name, kind,
				dash(i.Peer), i.MAC, i.MTU, i.State, dash(strings.Join(i.Addresses, ", ")))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, n := range info.Nodes {
		if n.ViewGone != "" {
			fmt.Fprintf(w, "node %s: %s\n", n.Node, n.ViewGone)
		}
	}
	printStopped(w, info)
	printQueues(w, info)
	printImpairments(w, info)
	printFastPaths(w, info)
	printOffloads(w, info)
	printNetfilter(w, info)
	printServices(w, info)
	printLimits(w, info)
	printRouting(w, info)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tFORWARDING\tTABLE\tROUTE\tVIA\tDEV\tMETRIC\tPROTO")
	for _, n := range info.Nodes {
		fw := forwarding(n)
		for _, r := range n.Routes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, fw, tableName(r.Table), r.To, dash(r.Via), dash(r.Dev), dash(metric(r.Metric)), r.Proto)
		}
	}
	tw.Flush()
	printRules(w, info)
}

// printRules lists the nodes' policy routing rules, when any has some.
func printRules(w io.Writer, info *LabInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := false
	for _, n := range info.Nodes {
		for _, r := range n.Rules {
			if !header {
				fmt.Fprintln(w)
				fmt.Fprintln(tw, "NODE\tPRIORITY\tFROM\tTO\tIIF\tOIF\tTABLE")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", n.Node, r.Priority, cmp.Or(r.From, "all"), dash(r.To), dash(r.IIF), dash(r.OIF), tableName(r.Table))
		}
	}
	tw.Flush()
}

func tableName(t int) string {
	switch t {
	case 254:
		return "main"
	case 253:
		return "default"
	}
	return strconv.Itoa(t)
}

func forwarding(n NodeInfo) string {
	switch {
	case n.Forwarding.IPv4 && n.Forwarding.IPv6:
		return "ipv4+ipv6"
	case n.Forwarding.IPv4:
		return "ipv4"
	case n.Forwarding.IPv6:
		return "ipv6"
	}
	return "off"
}

func metric(m int) string {
	if m == 0 {
		return ""
	}
	return strconv.Itoa(m)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printQueues shows each interface's queues as the kernel has them, with
// the node's CPU placement, when anything is placed or has several queues.
func printQueues(w io.Writer, info *LabInfo) {
	if !anyQueues(info) {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPLACEMENT\tINTERFACE\tQUEUES RX/TX\tRPS CPUS\tXPS CPUS\tNAPI")
	for _, n := range info.Nodes {
		place := "-"
		if p := n.Placement; p != nil {
			place = "cpu " + p.CPUs + " (" + p.Receive + ")"
		}
		for _, i := range n.Interfaces {
			if q := i.Queues; q != nil {
				napi := "-"
				if q.Threaded {
					napi = "threaded"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", n.Node, place, i.Name, q.Rx, q.Tx, cpuLists(q.RPS), cpuLists(q.XPS), napi)
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func anyQueues(info *LabInfo) bool {
	for _, n := range info.Nodes {
		if n.Placement != nil {
			return true
		}
		for _, i := range n.Interfaces {
			if i.Queues != nil && (i.Queues.Rx > 1 || i.Queues.Tx > 1 || i.Queues.Threaded) {
				return true
			}
		}
	}
	return false
}

// cpuLists shows a CPU list per queue ("1 | 1"), "-" for none.
func cpuLists(per []string) string {
	out := make([]string, len(per))
	for i, c := range per {
		out[i] = dash(c)
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, " | ")
}

// printImpairments lists the interfaces whose egress has a qdisc of its own
// (an impairment, a queue), as the kernel has it now, with each qdisc's
// counters since it was made: a row for the root, one for the queue
// under it.
func printImpairments(w io.Writer, info *LabInfo) {
	t := newTable(w, "NODE\tINTERFACE\tIMPAIRMENT (what it sends)\tQDISC\tSENT\tDROPPED\tOVERLIMITS\tREQUEUES\tBACKLOG")
	for _, n := range info.Nodes {
		for _, i := range n.Interfaces {
			if i.Impairment == "" {
				continue
			}
			t.start()
			for k, q := range i.Qdiscs {
				node, ifc, what := n.Node, i.Name, i.Impairment
				if k > 0 {
					node, ifc, what = "", "", ""
				}
				t.row("%s\t%s\t%s\t%s (%s)\t%d\t%d\t%d\t%d\t%dp %db", node, ifc, what, q.Kind, q.Parent, q.Packets, q.Drops, q.Overlimits, q.Requeues, q.Qlen, q.Backlog)
			}
		}
	}
	t.end()
}

// printOffloads lists the interfaces whose offloads the file sets, with
// every offload as the kernel has it now.
func printOffloads(w io.Writer, info *LabInfo) {
	t := newTable(w, "NODE\tINTERFACE\tOFFLOADS (the kernel's now)\tTHE FILE SETS\tNAPI (the kernel's now)")
	for _, n := range info.Nodes {
		for _, i := range n.Interfaces {
			if len(i.OffloadsSet) == 0 && !i.NAPISet {
				continue
			}
			var napi []string
			for _, f := range NAPIFiles {
				if v, ok := i.NAPI[f]; ok {
					napi = append(napi, f+" "+v)
				}
			}
			if i.BusyPoll != "" {
				napi = append(napi, "busy_poll "+i.BusyPoll+" (the file's: nslab's receiving sockets take it)")
			}
			t.row("%s\t%s\t%s\t%s\t%s", n.Node, i.Name, spec.OffloadWords(i.Offloads), strings.Join(i.OffloadsSet, ", "), strings.Join(napi, ", "))
		}
	}
	t.end()
}

// printFastPaths lists the nodes' XDP fast paths with their counters
// since they were attached, and why it passed what it passed.
func printFastPaths(w io.Writer, info *LabInfo) {
	t := newTable(w, "NODE\tFAST PATH\tINTERFACES\tENTERED\tFORWARDED\tPASSED\tDROPPED\tWHY PASSED")
	for _, n := range info.Nodes {
		fp := n.FastPath
		if fp == nil {
			continue
		}
		var why []string
		for _, r := range slices.Sorted(maps.Keys(fp.Counts)) {
			if c := fp.Counts[r]; c > 0 && strings.HasPrefix(r, "passed: ") {
				why = append(why, fmt.Sprintf("%d %s", c, strings.TrimPrefix(r, "passed: ")))
			}
		}
		t.row("%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s", n.Node, fp.Kind, strings.Join(fp.Interfaces, ","), fp.Entered, fp.Forwarded, fp.Passed, fp.Dropped, strings.Join(why, "; "))
	}
	t.end()
}

// printNetfilter lists each node's NAT and firewall rules as the kernel
// has them now, with their counters.
func printNetfilter(w io.Writer, info *LabInfo) {
	t := newTable(w, "NODE\tCHAIN\tRULE\tPACKETS\tBYTES\tFROM THE FILE")
	for _, n := range info.Nodes {
		nf := n.Netfilter
		if nf == nil {
			continue
		}
		t.start()
		if nf.Missing {
			t.row("%s\t-\tMISSING: no table %s\t-\t-\t-", n.Node, nf.Table)
			continue
		}
		for _, ft := range nf.Flowtables {
			t.row("%s\tflowtable %s\tover %s\t-\t-\tnodes.%s.flowtable", n.Node, ft.Name, strings.Join(ft.Devices, ", "), n.Node)
		}
		for _, c := range nf.Chains {
			if c.Hook == "forward" {
				t.row("%s\t%s\tpolicy %s\t-\t-\t-", n.Node, c.Name, c.Policy)
			}
		}
		for _, r := range nf.Rules {
			t.row("%s\t%s\t%s\t%d\t%d\t%s", n.Node, r.Chain, dash(r.Rule), r.Packets, r.Bytes, dash(r.Path))
		}
	}
	t.end()
}

// printServices lists the lab's services and whether each still runs.
func printServices(w io.Writer, info *LabInfo) {
	if len(info.Services) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSERVICE\tPID\tSTATE\tLOG")
	for _, s := range info.Services {
		state := "running"
		if !s.Running {
			state = "exited"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.Node, s.Command, s.PID, state, s.Log)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// printRouting lists each node's routing daemons and their sessions,
// when a node runs some.
func printRouting(w io.Writer, info *LabInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	any := false
	for _, n := range info.Nodes {
		ri := n.Routing
		if ri == nil {
			continue
		}
		if !any {
			fmt.Fprintln(tw, "NODE\tDAEMONS\tSESSION\tNEIGHBOUR\tSTATE\tROUTES")
			any = true
		}
		var ds []string
		for _, d := range ri.Daemons {
			state := "running"
			if !d.Running {
				state = "NOT RUNNING"
			}
			ds = append(ds, d.Name+" "+state)
		}
		daemons := ri.Suite + ": " + strings.Join(ds, ", ")
		if ri.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t%s\t-\n", n.Node, daemons, ri.Error)
		}
		if len(ri.Sessions) == 0 && ri.Error == "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\tno sessions\t-\n", n.Node, daemons)
		}
		for _, s := range ri.Sessions {
			routes := "-"
			if s.Routes >= 0 {
				routes = fmt.Sprint(s.Routes)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, daemons, s.Protocol, s.Neighbor, s.State, routes)
			daemons = "\""
		}
	}
	tw.Flush()
	if any {
		fmt.Fprintln(w)
	}
}

// printStopped lists the nodes nslab node stop stopped.
func printStopped(w io.Writer, info *LabInfo) {
	for _, n := range info.Nodes {
		if n.Stopped {
			fmt.Fprintf(w, "node %s is STOPPED since %s: its links are down at both ends, its processes stopped (nslab node start %s)\n", n.Node, n.StoppedSince.Local().Format(time.DateTime), n.Node)
		}
	}
	if slices.ContainsFunc(info.Nodes, func(n NodeInfo) bool { return n.Stopped }) {
		fmt.Fprintln(w)
	}
}
