package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/sample"
	"github.com/nslab/nslab/topology/spec"
)

// Report is one measured run.
type Report struct {
	Lab        string          `json:"lab"`
	Traffic    string          `json:"traffic"`
	From       string          `json:"from"`
	To         string          `json:"to"`
	Frame      int             `json:"frame"` // L2 frame including FCS
	Engine     string          `json:"engine"`
	Reason     string          `json:"reason,omitempty"`
	Elapsed    time.Duration   `json:"elapsed_ns"`
	Sent       uint64          `json:"sent"`     // what the engine handed to the sender interface: accepted + dropped by it
	Received   uint64          `json:"received"` // the receiver's rx counter delta
	Loss       int64           `json:"loss"`
	LossPct    float64         `json:"loss_pct"`
	PPS        float64         `json:"pps"`        // received / elapsed
	SteadyPPS  float64         `json:"steady_pps"` // receiver, steady window
	MbpsL2     float64         `json:"mbps_l2"`    // with FCS
	MbpsL1     float64         `json:"mbps_l1"`    // + preamble and gap (20 bytes)
	SteadyL2   float64         `json:"steady_mbps_l2"`
	Hops       []HopCounters   `json:"hops"`
	NamedDrops uint64          `json:"named_drops"`
	Unaccount  int64           `json:"unaccounted"`
	Path       []spec.Hop      `json:"path"`
	NextHop    string          `json:"next_hop"`
	NextHopMAC string          `json:"next_hop_mac"`
	Routers    []RouterDrops   `json:"routers"`
	Softnet    Softnet         `json:"softnet"`
	CPU        []CPUUse        `json:"cpu"`
	Env        Env             `json:"environment"`
	Result     *engine.Result  `json:"engine_result"`
	Targets    []sample.Target `json:"-"`
	roles      []string
	Samples    []sample.Sample `json:"-"`
}

// RouterDrops is what a router's IP layer did with the run's packets.
type RouterDrops struct {
	Node      string            `json:"node"`
	Lost      int64             `json:"lost"` // ingress rx - egress tx: lost between them
	Forwarded uint64            `json:"forwarded"`
	Discards  map[string]uint64 `json:"discards"` // IP MIB counters that count drops
}

// Softnet is /proc/net/softnet_stat over the run, summed over CPUs. Its
// drops are backlog drops that veth also counts as the sender's tx_dropped,
// so they are shown, not added to the named drops.
type Softnet struct {
	Dropped     uint64 `json:"dropped"`
	TimeSqueeze uint64 `json:"time_squeeze"`
}

// HopCounters is one sampled interface's change over the run.
type HopCounters struct {
	sample.Target
	Role string `json:"role"` // sender, ingress, egress, receiver
	sample.Counters
}

// fill computes the report from the engine's result and the counters.
func (r *Report) fill(res *engine.Result, base, final sample.Sample) {
	// A packet the sender's device took but dropped was sent as far as the
	// engine could: it counts as sent, and as the sender's tx_dropped.
	r.Engine, r.Reason, r.Result, r.Elapsed, r.Sent = res.Engine, res.Reason, res, res.Elapsed, res.Sent+res.Errors
	for i, t := range r.Targets {
		d := final.Counters[i].Sub(base.Counters[i])
		r.Hops = append(r.Hops, HopCounters{Target: t, Role: r.roles[i], Counters: d})
	}
	last := len(r.Hops) - 1
	r.Received = r.Hops[last].RxPackets
	r.Loss = int64(r.Sent) - int64(r.Received)
	if r.Sent > 0 {
		r.LossPct = 100 * float64(r.Loss) / float64(r.Sent)
	}
	if r.Elapsed > 0 {
		r.PPS = float64(r.Received) / r.Elapsed.Seconds()
	}
	r.MbpsL2, r.MbpsL1 = mbps(r.PPS, r.Frame)
	if a, b, ok := sample.Steady(r.Samples); ok {
		r.SteadyPPS = sample.Rates(a, b)[last].RxPPS
		r.SteadyL2, _ = mbps(r.SteadyPPS, r.Frame)
	}
	// Where packets were lost, by counters that name the drop. On a veth
	// link a drop is counted at both ends (the sender end's tx_dropped and
	// the receiving end's rx_dropped are the same packets), so each link
	// counts the larger of the two, not their sum.
	if r.Hops[0].Role == "sender" {
		for i := 0; i+1 < len(r.Hops); i += 2 {
			out, in := r.Hops[i], r.Hops[i+1]
			r.NamedDrops += max(out.TxDropped, in.RxDropped+in.RxMissed)
		}
	} else {
		for _, h := range r.Hops {
			r.NamedDrops += h.TxDropped + h.RxDropped + h.RxMissed
		}
	}
	for k := range r.Routers {
		rt := &r.Routers[k]
		for _, d := range rt.Discards {
			r.NamedDrops += d
		}
		for i := 0; i+1 < len(r.Hops); i++ {
			if r.Hops[i].Node == rt.Node && r.Hops[i].Role == "ingress" && r.Hops[i+1].Role == "egress" {
				rt.Lost = int64(r.Hops[i].RxPackets) - int64(r.Hops[i+1].TxPackets)
			}
		}
	}
	r.Unaccount = r.Loss - int64(r.NamedDrops)
}

func roles(p []spec.Hop) []string {
	var out []string
	for i, h := range p {
		switch {
		case i == 0:
			out = append(out, "sender")
		case i == len(p)-1:
			out = append(out, "receiver")
		case h.L2:
			out = append(out, "switch in", "switch out")
		default:
			out = append(out, "ingress", "egress")
		}
	}
	return out
}

func mbps(pps float64, frame int) (l2, l1 float64) {
	return pps * float64(frame) * 8 / 1e6, pps * float64(frame+20) * 8 / 1e6
}

// Formats a report can be written in.
var Formats = []string{"table", "json", "csv", "markdown"}

// Write writes reports in a format.
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
		fmt.Fprintln(w, "frame,sent,received,loss,loss_pct,pps,mbps_l2,mbps_l1,steady_pps,engine")
		for _, r := range reps {
			fmt.Fprintf(w, "%d,%d,%d,%d,%.4f,%.0f,%.2f,%.2f,%.0f,%s\n", r.Frame, r.Sent, r.Received, r.Loss, r.LossPct, r.PPS, r.MbpsL2, r.MbpsL1, r.SteadyPPS, r.Engine)
		}
		return nil
	case "markdown":
		fmt.Fprintln(w, "| frame (B) | pps | Mb/s L2 | Mb/s L1 | sent | received | loss % |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		for _, r := range reps {
			fmt.Fprintf(w, "| %d | %.0f | %.1f | %.1f | %d | %d | %.3f |\n", r.Frame, r.PPS, r.MbpsL2, r.MbpsL1, r.Sent, r.Received, r.LossPct)
		}
		return nil
	case "table", "":
		for _, r := range reps {
			r.table(w)
		}
		return nil
	}
	return fmt.Errorf("format %q: use %s", format, strings.Join(Formats, ", "))
}

func (r *Report) table(w io.Writer) {
	fmt.Fprintf(w, "lab %s, traffic %s: %s -> %s, next hop %s (%s)\n", r.Lab, r.Traffic, r.From, r.To, r.NextHop, r.NextHopMAC)
	fmt.Fprintf(w, "engine: %s", r.Engine)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintf(w, "\nframe %d bytes (with FCS), %.3f s\n\n", r.Frame, r.Elapsed.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sent\treceived\tloss\tloss %\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%.3f\t\n", r.Sent, r.Received, r.Loss, r.LossPct)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "at the receiver\tpps\tMb/s L2\tMb/s L1\t")
	fmt.Fprintf(tw, "counts / elapsed\t%.0f\t%.1f\t%.1f\t\n", r.PPS, r.MbpsL2, r.MbpsL1)
	if r.SteadyPPS > 0 {
		_, l1 := mbps(r.SteadyPPS, r.Frame)
		fmt.Fprintf(tw, "steady window\t%.0f\t%.1f\t%.1f\t\n", r.SteadyPPS, r.SteadyL2, l1)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tINTERFACE\tRX\tTX\tRX DROP\tTX DROP")
	for _, h := range r.Hops {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", h.Role, h.Target, h.RxPackets, h.TxPackets, h.RxDropped+h.RxMissed, h.TxDropped)
	}
	tw.Flush()
	for _, rt := range r.Routers {
		fmt.Fprintf(w, "router %s: forwarded %d, lost between ingress and egress %d", rt.Node, rt.Forwarded, rt.Lost)
		for _, k := range ipDiscards {
			if d := rt.Discards[k]; d > 0 {
				fmt.Fprintf(w, ", %s %d", k, d)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "softnet (all CPUs): backlog drops %d, budget squeezes %d\n", r.Softnet.Dropped, r.Softnet.TimeSqueeze)
	fmt.Fprintf(w, "loss %d = named drops %d + unaccounted %d\n\n", r.Loss, r.NamedDrops, r.Unaccount)
	if len(r.CPU) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		io.WriteString(tw, "CPU\t%usr\t%sys\t%irq\t%soft\t%idle\t\n")
		for _, c := range r.CPU {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", c.CPU, c.User, c.System, c.IRQ, c.SoftIRQ, c.Idle)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	e := r.Env
	fmt.Fprintf(w, "kernel %s; %d x %s\n", e.Kernel, e.CPUs, e.CPUModel)
	var sys []string
	for _, k := range globalSysctls {
		if v, ok := e.Sysctls[k]; ok {
			sys = append(sys, k+"="+v)
		}
	}
	fmt.Fprintf(w, "%s\n", strings.Join(sys, " "))
	if e.LabHash != "" {
		fmt.Fprintf(w, "lab file sha256 %s, nslab %s, engine %s\n", e.LabHash, e.NSLab, e.EngineV)
	}
	fmt.Fprintln(w)
}
