package report

import (
	"encoding/json"
	"fmt"
	"github.com/nslab/nslab/pktgen/measured"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Formats a report can be written in.
var Formats = []string{"table", "json", "csv", "markdown"}

// CheckFormat checks a format name.
func CheckFormat(f string) error {
	for _, x := range Formats {
		if f == x {
			return nil
		}
	}
	return fmt.Errorf("format %q: use %s", f, strings.Join(Formats, ", "))
}

// Write writes reports in a format. Every format carries the balance
// (sent = received + named drops + unaccounted) and the verdict.
func Write(w io.Writer, format string, reps []*Report) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(reps) == 1 {
			return enc.Encode(reps[0])
		}
		return enc.Encode(reps)
	case "csv":
		return writeCSV(w, reps)
	case "markdown":
		return writeMarkdown(w, reps)
	case "table", "":
		for _, r := range reps {
			if r.TCP != nil {
				if err := r.tcpTable(w); err != nil {
					return err
				}
				continue
			}
			if err := r.table(w); err != nil {
				return err
			}
		}
		return nil
	}
	return CheckFormat(format)
}

func writeCSV(w io.Writer, reps []*Report) error {
	ew := &errWriter{w: w}
	if len(reps) > 0 && reps[0].TCP != nil {
		ew.printf(tcpCSVHead)
		for _, r := range reps {
			r.tcpCSV(ew)
		}
		return ew.err
	}
	ew.printf("frame,sent,received,loss,loss_pct,named_drops,unaccounted,pps,mbps_l2,mbps_l1,steady_pps,engine,bottleneck,added,%s,router_ns_per_packet,router_relative_cost\n", latencyCSVHead)
	for _, r := range reps {
		ns, rel := r.costCells("")
		ew.printf("%d,%d,%d,%d,%.4f,%d,%d,%.0f,%.2f,%.2f,%.0f,%s,%q,%d,%s,%s,%s\n", r.Frame, r.Sent, r.Received, r.Loss, r.LossPct,
			r.NamedDrops, r.Unaccount, r.PPS, r.MbpsL2, r.MbpsL1, r.SteadyPPS, r.Engine, r.Bottleneck, r.NamedAdded, r.latencyCSV(), ns, rel)
	}
	return ew.err
}

func writeMarkdown(w io.Writer, reps []*Report) error {
	ew := &errWriter{w: w}
	if len(reps) > 0 && reps[0].TCP != nil {
		ew.printf("| flows | cc | goodput Mb/s | retransmitted | lost | spurious | unexplained | SRTT ms | min RTT ms | bottleneck |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range reps {
			r.tcpMarkdown(ew)
		}
		return ew.err
	}
	ew.printf("| frame (B) | pps | Mb/s L2 | Mb/s L1 | sent | received | loss %% | named drops | added | unaccounted | router ns/packet | relative cost | latency p50 / p99 / max | lost / dup / reordered by sequence | bottleneck |\n")
	ew.printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range reps {
		ns, rel := r.costCells("-")
		ew.printf("| %d | %.0f | %.1f | %.1f | %d | %d | %.3f | %d | %d | %d | %s | %s | %s | %s | %s |\n", r.Frame, r.PPS, r.MbpsL2, r.MbpsL1,
			r.Sent, r.Received, r.LossPct, r.NamedDrops, r.NamedAdded, r.Unaccount, ns, rel, r.LatencyCell(), r.sequenceCell(), strings.ReplaceAll(r.Bottleneck, "|", "/"))
	}
	return ew.err
}

// costCells are the router's cost per packet (ns) and its relative cost
// for a row, none when it was not measured.
func (r *Report) costCells(none string) (ns, relative string) {
	ns, relative = none, none
	if c := r.Cost; c != nil && c.Packets > 0 {
		ns = fmt.Sprintf("%.0f", c.NsPerPacket)
		if c.RelativeCost > 0 {
			relative = fmt.Sprintf("%.3f", c.RelativeCost)
		}
	}
	return ns, relative
}

// errWriter keeps the first write error, so a report is written whole or
// its error returned.
type errWriter struct {
	w   io.Writer
	err error
	// details: the report's long forms too (bench --details): how each
	// figure was obtained, in the words of the line it explains.
	details bool
}

// detailf writes what only the long form of a report says.
func (e *errWriter) detailf(format string, args ...any) {
	if e.details {
		e.printf(format, args...)
	}
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// table writes one report for a terminal.
func (r *Report) table(w io.Writer) error {
	ew := &errWriter{w: w, details: r.Details}
	r.tableHead(ew)
	r.latencyLines(ew)
	r.tableHops(ew)
	r.hostLines(ew)
	r.tableBalance(ew)
	r.fidelityLines(ew)
	r.failoverLines(ew)
	r.tableCPUs(ew)
	r.tableEnv(ew)
	return ew.err
}

func (r *Report) tableHead(ew *errWriter) {
	ew.printf("lab %s%s, traffic %s: %s -> %s, next hop %s (%s)\n", r.Lab, variantSuffix(r.Variant), r.Traffic, r.From, r.To, r.NextHop, r.NextHopMAC)
	ew.printf("engine: %s", r.Engine)
	if r.Reason != "" {
		short, rest := shortReason(r.Reason)
		ew.printf(" (%s", short)
		if rest != "" && !ew.details && r.DetailsHint != "" {
			ew.printf("; %s", r.DetailsHint)
		}
		ew.detailf("%s", rest)
		ew.printf(")")
	}
	offered := "as fast as the engine goes"
	if r.OfferedPPS > 0 {
		offered = fmt.Sprintf("%d pps per thread offered", r.OfferedPPS)
	}
	frames := fmt.Sprintf("frame %d bytes (with FCS)", r.Frame)
	if r.Mix != "" {
		frames = fmt.Sprintf("frames mixed %s (size:weight; mean %.1f bytes with FCS)", r.Mix, r.MeanFrame)
	}
	ew.printf("\n%s, %.3f s, %s\n", frames, r.Elapsed.Seconds(), offered)
	if r.Load != "" {
		ew.printf("load: %s\n", r.Load)
	}
	for _, d := range r.Differences {
		ew.printf("the kernel differs from the file (the run went by the kernel): %s\n", d)
	}
	ew.printf("\nbottleneck: %s\n", r.Bottleneck)
	r.stallLine(ew)
	ew.printf("\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sent\treceived\tloss\tloss %\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%.3f\t\n", r.Sent, r.Received, r.Loss, r.LossPct)
	tw.Flush()
	ew.printf("\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "at the receiver\tpps\tMb/s L2\tMb/s L1\t")
	if r.ReceiveWindow > 0 {
		fmt.Fprintf(tw, "counts / %.3f s received in\t%.0f\t%.1f\t%.1f\t\n", r.ReceiveWindow.Seconds(), r.PPS, r.MbpsL2, r.MbpsL1)
	} else {
		fmt.Fprintf(tw, "counts / elapsed\t%.0f\t%.1f\t%.1f\t\n", r.PPS, r.MbpsL2, r.MbpsL1)
	}
	if r.SteadyPPS > 0 {
		_, l1 := Mbps(r.SteadyPPS, r.frameBytes())
		fmt.Fprintf(tw, "steady window\t%.0f\t%.1f\t%.1f\t\n", r.SteadyPPS, r.SteadyL2, l1)
	}
	tw.Flush()
	ew.printf("\n")
}

func (r *Report) tableHops(ew *errWriter) {
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tINTERFACE\tRX\tTX\tRX DROP\tTX DROP\tNEIGH")
	for _, h := range r.Hops {
		if h.After != "" {
			fmt.Fprintf(tw, "(other host)\t%s: counted there\t\t\t\t\t\n", h.After)
		}
		neigh := "-"
		if h.Neighbour > 0 {
			neigh = fmt.Sprint(h.Neighbour)
		}
		if h.SentControl > 0 {
			neigh += fmt.Sprintf(" (sent %d)", h.SentControl)
		}
		target := h.String()
		if h.Host != "" {
			target += " (host " + h.Host + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", h.Role, target, h.RxPackets, h.TxPackets, h.RxDropped+h.RxMissed, h.TxDropped, neigh)
	}
	tw.Flush()
	for _, rt := range r.Routers {
		on := ""
		if rt.Host != "" {
			on = " on host " + rt.Host
		}
		ew.printf("router %s%s: entered %d, forwarded %d, dropped at its egress %d", rt.Node, on, rt.Entered, rt.Forwarded, rt.DroppedAtEgress)
		if rt.DuplicatedAtEgress > 0 {
			ew.printf(", copies its egress added %d", rt.DuplicatedAtEgress)
		}
		ew.printf(", lost inside %d; IP MIB: forwarded %d", rt.Inside, rt.ForwDatagrams)
		if r.TCP != nil {
			ew.printf(" (both ways: the flows' ACKs too)")
		}
		for _, k := range measured.IPDiscards {
			if d := rt.Discards[k]; d > 0 {
				ew.printf(", %s %d", k, d)
			}
		}
		if x := rt.XDP; x != nil {
			ew.printf("\nrouter %s's XDP fast path: forwarded %d, passed to the stack %d, dropped %d", rt.Node, x.Forwarded, x.Passed, x.Dropped)
			for _, k := range slices.Sorted(maps.Keys(x.Why)) {
				ew.printf(" (%s %d)", k, x.Why[k])
			}
		}
		ew.printf("\n")
	}
	for _, ct := range r.Conntrack {
		ew.printf("%s\n", ct.line(ew.details))
	}
	r.costLines(ew)
	ew.printf("\n")
}

// hostLines says how the other hosts' hops were read and their clocks,
// and which hosts stopped answering during the run, and from when: their
// hops' counters are those read up to then.
func (r *Report) hostLines(ew *errWriter) {
	if len(r.HostClocks) > 0 {
		var parts []string
		for _, c := range r.HostClocks {
			parts = append(parts, fmt.Sprintf("host %s %+.3f ms ± %.3f ms", c.Host, float64(c.Offset)/1e6, float64(c.Error)/1e6))
		}
		ew.printf("other hosts' hops read by their agents; their clocks against this one's: %s", strings.Join(parts, ", "))
		ew.detailf(" (measured by %s; each reading within the round trip of its ask)", r.HostClocks[0].By)
		ew.printf("\n\n")
	}
	for _, l := range r.LostHosts {
		ew.printf("host %s lost %.3f s into the run (%s): its hops' counters are those of its last reading", l.Host, l.At.Sub(r.Started).Seconds(), l.Why)
		if !l.LastRead.IsZero() {
			ew.printf(", %.3f s into the run", l.LastRead.Sub(r.Started).Seconds())
		}
		ew.printf("\n")
	}
	if len(r.LostHosts) > 0 {
		ew.printf("\n")
	}
}

func (r *Report) tableBalance(ew *errWriter) {
	if len(r.Drops) > 0 {
		what, n := "lost", r.Loss
		if len(r.Added) > 0 { // copies make up for some of the loss: name the drops
			what, n = "dropped", int64(r.NamedDrops)
		}
		ew.printf("where the %d %s packets went:\n", n, what)
		places(ew, r.Drops)
	}
	if len(r.Added) > 0 {
		ew.printf("where the %d added packets came from (they arrive too: received counts them):\n", r.NamedAdded)
		places(ew, r.Added)
	}
	if r.CountedBy != "" {
		ew.printf("counted at the receiver: %s\n", r.CountedBy)
	}
	if len(r.Shared) > 0 {
		ew.printf("counters that runs measured with it cross too (their hop rows above carry those runs as well): %s\n", strings.Join(r.Shared, ", "))
	}
	ew.printf("%s\n", BalanceLine(r.Sent, r.NamedAdded, r.Received, r.NamedDrops, r.Unaccount))
	c := r.SenderCheck
	ew.printf("engine: handed %d (sent %d, dropped by the device %d); ", c.EngineHanded, c.EngineSent, c.EngineErrors)
	switch {
	case c.Interface == 0 && c.Difference == 0:
		ew.printf("no sender interface measured\n")
	case c.Difference == 0:
		ew.printf("the sender interface took %d: they agree\n", c.Interface)
	default:
		ew.printf("the sender interface took %d: %s\n", c.Interface, c.Cause)
	}
	ew.printf("\n")
}

// places prints drops or added packets by place, with their cause.
func places(ew *errWriter, ds []Drop) {
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		place := d.Place
		if d.Host != "" {
			place += " (host " + d.Host + ")"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", place, d.Packets, d.causeAndQdisc(ew.details))
	}
	tw.Flush()
}

// causeAndQdisc is a drop's cause, and for a qdisc's drops, with
// details, its counters too (drops, overlimits, backlog).
func (d Drop) causeAndQdisc(details bool) string {
	if details && strings.HasPrefix(d.Place, "qdisc of ") && d.Cause != "" && d.Counted != "" {
		return d.Cause + " (" + d.Counted + ")"
	}
	return d.Cause
}

// BalanceLine is the accounting in a line: sent (+ added) = received +
// named drops + unaccounted.
func BalanceLine(sent, added, received, drops uint64, unaccounted int64) string {
	left := fmt.Sprintf("sent %d", sent)
	if added > 0 {
		left += fmt.Sprintf(" + added %d", added)
	}
	return fmt.Sprintf("%s = received %d + named drops %d + unaccounted %d", left, received, drops, unaccounted)
}

// tableCPUs writes the CPU tables of this host, and then of each other
// host whose hops were read, each under its name.
func (r *Report) tableCPUs(ew *errWriter) {
	if len(r.OtherHosts) > 0 && len(r.Hops) > 0 {
		ew.printf("host %s's CPUs (this host's, where the run was sent):\n", r.Hops[0].Host)
	}
	cpuTables(ew, r.Softnet, r.CPU)
	for _, h := range r.OtherHosts {
		ew.printf("host %s's CPUs (read by its agent with its hops, at the baseline and at the end):\n", h.Host)
		cpuTables(ew, h.Softnet, h.CPU)
	}
}

// cpuTables writes one host's softnet_stat and CPU time per CPU.
func cpuTables(ew *errWriter, softnet []SoftnetCPU, cpus []CPUUse) {
	// softnet_stat's figures are in the drops' causes; the table is the
	// long form's.
	if len(softnet) > 0 && ew.details {
		ew.printf("softnet_stat (machine-wide: every namespace's packets on each CPU)\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "CPU\tprocessed\tbacklog drops\tsqueezed\tRPS in\t")
		for _, s := range softnet {
			fmt.Fprintf(tw, "cpu%d\t%d\t%d\t%d\t%d\t\n", s.CPU, s.Processed, s.Dropped, s.TimeSqueeze, s.ReceivedRPS)
		}
		tw.Flush()
		ew.printf("\n")
	}
	if len(cpus) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		_, _ = io.WriteString(tw, "CPU\t%usr\t%sys\t%irq\t%soft\t%steal\t%idle\t  PLACED THERE\n") // errors reach ew
		for _, c := range cpus {
			roles := strings.Join(c.Roles, ", ")
			if roles == "" {
				roles = "-"
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t  %s\n", c.CPU, c.User, c.System, c.IRQ, c.SoftIRQ, c.Steal, c.Idle, roles)
		}
		tw.Flush()
		ew.printf("\n")
	}
}

func (r *Report) tableEnv(ew *errWriter) {
	e := r.Env
	ew.printf("kernel %s; %s\n", e.Kernel, e.CPUModel)
	ew.detailf("machine: %d CPUs online (%s); this process may use %s\n", e.CPUs, e.OnlineCPUs, e.AllowedCPUs)
	ew.printf("placement: %s\n", strings.Join(e.Placement, "; "))
	if e.Sampler != "" {
		ew.printf("%s\n", e.Sampler)
	}
	if len(e.Impairments) > 0 {
		var parts []string
		for _, t := range r.Targets {
			if q, ok := e.Impairments[t.String()]; ok {
				parts = append(parts, t.String()+" "+q)
			}
		}
		ew.printf("impairments")
		ew.detailf(" (what each interface does to what it sends)")
		ew.printf(": %s\n", strings.Join(parts, "; "))
	}
	var sys []string
	for _, k := range GlobalSysctls {
		if v, ok := e.Sysctls[k]; ok {
			sys = append(sys, k+"="+v)
		}
	}
	ew.detailf("%s\n", strings.Join(sys, " "))
	if len(e.LabSets) > 0 {
		ew.printf("set by the lab file (machine: sysctls, given back at destroy): %s\n", strings.Join(e.LabSets, " "))
	}
	if e.LabHash != "" && e.AsDeployed {
		ew.printf("lab file %s as deployed (not the file given)\nsha256 %s, nslab %s\n", e.LabFile, e.LabHash, e.NSLab)
	} else if e.LabHash != "" {
		ew.printf("lab file sha256 %s\nnslab %s", e.LabHash, e.NSLab)
		if e.EngineV != "" {
			ew.printf(", engine %s", e.EngineV)
		}
		ew.printf("\n")
	}
	ew.printf("\n") // a blank line between reports printed one after another
}

// shortReason splits an explanation at its first parenthesis or
// semicolon once it is long: the first part for the default report, the
// rest for --details.
func shortReason(s string) (short, rest string) {
	if len(s) <= 70 {
		return s, ""
	}
	i := strings.Index(s, " (")
	if j := strings.Index(s, "; "); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// Write lets tabwriters write through e.
func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
