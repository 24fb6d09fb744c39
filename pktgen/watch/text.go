package watch

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable renders v for the terminal: the bench that runs, the
// interfaces (in v's order), the CPUs, then the nodes that forward,
// discard or track connections.
func (v *View) WriteTable(w io.Writer) {
	if b := v.Bench; b != nil {
		fmt.Fprintln(w, b.Line())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODE\tINTERFACE\tRX PPS\tTX PPS\tRX Mb/s\tTX Mb/s\tRX DROP\tTX DROP\tQDISC DROP\t")
	for _, i := range v.Interfaces {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.1f\t%.1f\t%d\t%d\t%d\t\n", i.Node, i.Interface, i.RxPPS, i.TxPPS, i.RxMbps, i.TxMbps, i.RxDrops, i.TxDrops, i.QdiscDrops)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CPU\tBUSY %\tSOFTIRQ %\tSTEAL %\tBACKLOG DROP\tSQUEEZED\t")
	for i, c := range v.CPU {
		var drop, squeeze uint64
		if i < len(v.Softnet) {
			drop, squeeze = v.Softnet[i].Dropped, v.Softnet[i].TimeSqueeze
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%d\t%d\t\n", c.CPU, c.Busy(), c.SoftIRQ, c.Steal, drop, squeeze)
	}
	tw.Flush()
	v.writeNodes(w)
	v.writeTCP(w)
}

// tcpShown bounds the connections the table lists.
const tcpShown = 10

// writeTCP lists the TCP connections that moved data in the interval,
// the fastest first.
func (v *View) writeTCP(w io.Writer) {
	if v.NoTCP != "" {
		fmt.Fprintf(w, "\nTCP connections: none listed: %s\n", v.NoTCP)
	}
	if len(v.TCP) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODE\tTCP LOCAL\tREMOTE\tSTATE\tSEND Mb/s\tRECV Mb/s\tRETRANS\tCWND\tSRTT ms\t")
	for _, c := range v.TCP[:min(len(v.TCP), tcpShown)] {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%d\t%d\t%.2f\t\n", c.Node, c.Local, c.Remote, c.State, c.SendMbps, c.RecvMbps, c.Retrans, c.Cwnd, c.SRTTms)
	}
	tw.Flush()
	if n := len(v.TCP) - tcpShown; n > 0 {
		fmt.Fprintf(w, "(and %d more connections; the JSON format lists all)\n", n)
	}
}

// writeNodes lists the nodes that forwarded, discarded or track
// connections in the interval.
func (v *View) writeNodes(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, n := range v.Nodes {
		if n.ForwardedPPS == 0 && n.Discards == 0 && n.Conntrack == nil && !n.Stopped {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(tw, "NODE\tSTATE\tFORWARDED PPS\tIP DISCARDS\tCPUS\tBUSY %\tCONNTRACK\t")
			header = true
		}
		state := "running"
		if n.Stopped {
			state = "STOPPED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%d\t%s\t%.1f\t%s\t\n", n.Node, state, n.ForwardedPPS, n.Discards, n.CPUs, n.Busy, conntrackText(n.Conntrack))
	}
	tw.Flush()
}

// conntrackText is a node's conntrack figures in a cell.
func conntrackText(ct map[string]uint64) string {
	if ct == nil {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ct)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, ct[k]))
	}
	return strings.Join(parts, ", ")
}

// Line says in a line what the bench does or did: its run, the rate the
// last hop received in its last interval, and how it ended.
func (b *BenchStatus) Line() string {
	state := "running"
	if !b.Running {
		state = "ended"
	}
	s := fmt.Sprintf("bench (pid %d) %s: %s", b.PID, state, b.Traffic)
	if e := b.Last; e != nil && len(e.Hops) > 0 {
		last := e.Hops[len(e.Hops)-1]
		what := fmt.Sprintf("%d-byte frames", e.Frame)
		if e.Frame == 0 {
			what = "TCP flows" // a TCP run has no frame size
		}
		s += fmt.Sprintf(", %s, %.1f s in: %s:%s received %.0f pps", what, e.At, last.Node, last.Interface, last.RxPPS)
	}
	if e := b.End; e != nil {
		switch {
		case e.Error != "":
			s += "; failed: " + e.Error
		case len(e.Verdicts) > 0:
			s += "; " + strings.Join(e.Verdicts, "; ")
		}
	}
	return s
}
