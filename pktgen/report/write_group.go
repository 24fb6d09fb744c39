package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteGroups writes the reports of runs measured together, a group per
// frame size: each run's own report, then a row per run and the
// aggregate, whose balance takes every counter once.
func WriteGroups(w io.Writer, format string, groups []*GroupReport) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(groups)
	case "csv":
		return writeGroupsCSV(w, groups)
	case "markdown":
		return writeGroupsMarkdown(w, groups)
	case "table", "":
		for _, g := range groups {
			if err := g.table(w); err != nil {
				return err
			}
		}
		return nil
	}
	return CheckFormat(format)
}

func (g *GroupReport) names() []string {
	var out []string
	for _, r := range g.Streams {
		out = append(out, r.Traffic)
	}
	return out
}

// table writes one group as text.
func (g *GroupReport) table(w io.Writer) error {
	ew := &errWriter{w: w, details: len(g.Streams) > 0 && g.Streams[0].Details}
	a := g.Aggregate
	ew.printf("=== %d-byte frames: runs %s together; all running at once for %.3f s of %.3f s ===\n\n",
		g.Frame, strings.Join(g.names(), ", "), a.Overlap.Seconds(), a.Span.Seconds())
	for _, r := range g.Streams {
		ew.printf("--- run %s ---\n", r.Traffic)
		if ew.err != nil {
			return ew.err
		}
		write := r.table
		if r.TCP != nil {
			write = r.tcpTable
		}
		if err := write(w); err != nil {
			return err
		}
	}
	// The runs side by side: their start and end with --details, the
	// latency and sequence columns where a run measured them.
	timed := ew.details
	seq := slices.ContainsFunc(g.Streams, func(r *Report) bool { return r.Latency != nil || r.Sequence != nil })
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	head := "RUN\tFROM\tTO\tSENT\tRECEIVED\tLOSS\tLOSS %\tPPS\tMb/s L2"
	if timed {
		head += "\tSTARTED\tENDED"
	}
	if seq {
		head += "\tLATENCY p50 / p99 / max\tLOST / DUP / REORD"
	}
	fmt.Fprintln(tw, head)
	t0 := g.Streams[0].Started
	for _, r := range g.Streams {
		t0 = minTime(t0, r.Started)
	}
	for _, r := range g.Streams {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%.3f\t%.0f\t%.1f", r.Traffic, r.From, r.To, r.Sent, r.Received, r.Loss, r.LossPct, r.PPS, r.MbpsL2)
		if timed {
			fmt.Fprintf(tw, "\t+%.3fs\t+%.3fs", r.Started.Sub(t0).Seconds(), r.Ended.Sub(t0).Seconds())
		}
		if seq {
			fmt.Fprintf(tw, "\t%s\t%s", r.LatencyCell(), r.sequenceCell())
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "all\t\t\t%d\t%d\t%d\t%.3f\t%.0f\t%.1f\n", a.Sent, a.Received, a.Loss, a.LossPct, a.PPS, a.MbpsL2)
	tw.Flush()
	ew.printf("\n")
	ew.detailf("how each run was counted: %s\n", strings.Join(a.Counting, "; "))
	if len(a.Drops) > 0 {
		ew.printf("where the %d dropped packets of all runs went (every counter once):\n", a.NamedDrops)
		groupPlaces(ew, a.Drops)
	}
	if len(a.Added) > 0 {
		ew.printf("where the %d added packets of all runs came from (they arrive too):\n", a.NamedAdded)
		groupPlaces(ew, a.Added)
	}
	ew.printf("all runs: %s\n", BalanceLine(a.Sent, a.NamedAdded, a.Received, a.NamedDrops, a.Unaccount))
	ew.printf("all runs: bottleneck: %s\n\n", a.Bottleneck)
	return ew.err
}

// groupPlaces prints the aggregate's drops or added packets by place.
func groupPlaces(ew *errWriter, ds []Drop) {
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", d.Place, d.Packets, orCounted(d))
	}
	tw.Flush()
}

func writeGroupsCSV(w io.Writer, groups []*GroupReport) error {
	ew := &errWriter{w: w}
	ew.printf("run,frame,sent,received,loss,loss_pct,named_drops,unaccounted,pps,mbps_l2,engine,bottleneck,added,%s\n", latencyCSVHead)
	for _, g := range groups {
		for _, r := range g.Streams {
			ew.printf("%s,%d,%d,%d,%d,%.4f,%d,%d,%.0f,%.2f,%s,%q,%d,%s\n", r.Traffic, r.Frame, r.Sent, r.Received, r.Loss, r.LossPct,
				r.NamedDrops, r.Unaccount, r.PPS, r.MbpsL2, r.Engine, r.Bottleneck, r.NamedAdded, r.latencyCSV())
		}
		a := g.Aggregate
		ew.printf("all,%d,%d,%d,%d,%.4f,%d,%d,%.0f,%.2f,,%q,%d,%s\n", g.Frame, a.Sent, a.Received, a.Loss, a.LossPct, a.NamedDrops, a.Unaccount, a.PPS, a.MbpsL2, a.Bottleneck, a.NamedAdded, strings.Repeat(",", 14))
	}
	return ew.err
}

func writeGroupsMarkdown(w io.Writer, groups []*GroupReport) error {
	ew := &errWriter{w: w}
	ew.printf("| run | frame (B) | pps | Mb/s L2 | sent | received | loss %% | named drops | added | unaccounted | latency p50 / p99 / max | lost / dup / reord by seq | bottleneck |\n")
	ew.printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, r := range g.Streams {
			ew.printf("| %s | %d | %.0f | %.1f | %d | %d | %.3f | %d | %d | %d | %s | %s | %s |\n", r.Traffic, r.Frame, r.PPS, r.MbpsL2,
				r.Sent, r.Received, r.LossPct, r.NamedDrops, r.NamedAdded, r.Unaccount, r.LatencyCell(), r.sequenceCell(), strings.ReplaceAll(r.Bottleneck, "|", "/"))
		}
		a := g.Aggregate
		ew.printf("| all | %d | %.0f | %.1f | %d | %d | %.3f | %d | %d | %d | - | - | %s |\n", g.Frame, a.PPS, a.MbpsL2, a.Sent, a.Received, a.LossPct, a.NamedDrops, a.NamedAdded, a.Unaccount, strings.ReplaceAll(a.Bottleneck, "|", "/"))
	}
	return ew.err
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// orCounted is a drop's cause, or failing that which counters saw it.
func orCounted(d Drop) string {
	if d.Cause != "" {
		return d.causeAndQdisc(true)
	}
	return d.Counted
}
