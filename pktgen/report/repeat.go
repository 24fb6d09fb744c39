package report

import (
	"sort"

	"github.com/nslab/nslab/pktgen/stats"
)

// SummaryLevel is the confidence the intervals aim at.
const SummaryLevel = 0.95

// FigureSummary is one figure of one traffic run and frame size over the
// rounds.
type FigureSummary struct {
	Traffic string `json:"traffic"`
	Frame   int    `json:"frame"`
	Figure  string `json:"figure"` // "pps", "NDR conditional_throughput_pps", ...
	stats.Summary
	Values []float64 `json:"values"` // in the order measured
}

// figures are the values of the figures of one result, by name.
type figures map[string]float64

// runFigures are a measured run's figures: the receiver's rate, the loss,
// and the latency percentiles when measured.
func runFigures(r *Report) figures {
	if r.TCP != nil {
		return tcpFigures(r.TCP)
	}
	f := figures{"pps": r.PPS, "loss_pct": r.LossPct}
	if c := r.Cost; c != nil {
		if c.Packets > 0 {
			f["router_ns_per_packet"] = c.NsPerPacket
		}
		if c.ReceiverPackets > 0 {
			f["receiver_ns_per_packet"] = c.ReceiverNsPerPacket
		}
		if c.RelativeCost > 0 {
			f["router_relative_cost"] = c.RelativeCost
		}
		if c.Forwarded > 0 && !c.Shared && c.CPUNote == "" {
			f["cpu_ns_per_packet"] = c.CPUNsPerPacket
		}
	}
	if l := r.Latency; l != nil && l.Samples > 0 {
		f["latency_p50_ns"], f["latency_p99_ns"], f["latency_max_ns"] = float64(l.P50Ns), float64(l.P99Ns), float64(l.MaxNs)
	}
	return f
}

// tcpFigures are a TCP run's figures: goodput, retransmissions, and the
// probe's latency under load with its ratio to idle.
func tcpFigures(t *TCPRun) figures {
	f := figures{"goodput_mbps": t.Total.GoodputMbps, "retransmitted": float64(t.Losses.Retransmitted), "srtt_ns": float64(t.Total.SRTT)}
	if l := t.Latency; l != nil && l.Loaded != nil && l.Loaded.Samples > 0 {
		f["loaded_latency_p50_ns"], f["loaded_latency_p99_ns"] = float64(l.Loaded.P50Ns), float64(l.Loaded.P99Ns)
		if l.RatioP99 > 0 {
			f["latency_ratio_p99"] = l.RatioP99
		}
	}
	return f
}

// mlrFigures are an MLRsearch's figures, per goal.
func mlrFigures(m *MLRResult) figures {
	f := figures{}
	for _, g := range m.Goals {
		f[g.Name+" conditional_throughput_pps"] = g.ConditionalThroughputPPS
		f[g.Name+" lower_bound_pps"] = g.LowerBoundPPS
	}
	return f
}

// rfc2544Figures are RFC 2544 benchmarks' figures: the throughput, the
// latency at it, and the back-to-back burst and buffer.
func rfc2544Figures(r *RFC2544Result) figures {
	f := figures{"throughput_pps": r.Throughput.PPS}
	if l := r.Latency; l != nil && l.Latency != nil && l.Latency.Samples > 0 {
		f["latency_p50_ns"], f["latency_p99_ns"] = float64(l.Latency.P50Ns), float64(l.Latency.P99Ns)
	}
	if bb := r.BackToBack; bb != nil && bb.Skipped == "" {
		f["back_to_back_frames"], f["corrected_buffer_time_s"] = bb.MeanFrames, bb.CorrectedBufferTimeS
	}
	return f
}

// Results are what a bench run finished, by kind, in the order measured.
type Results struct {
	Reports  []*Report
	Groups   []*GroupReport // runs measured together, per frame size
	Searches []*SearchResult
	MLR      []*MLRResult
	RFC2544  []*RFC2544Result
}

// Summaries summarises every figure of out, per traffic run and frame.
func Summaries(out *Results, level float64) []FigureSummary {
	type key struct {
		traffic string
		frame   int
		figure  string
	}
	values := map[key][]float64{}
	add := func(traffic string, frame int, f figures) {
		for name, v := range f {
			k := key{traffic, frame, name}
			values[k] = append(values[k], v)
		}
	}
	for _, r := range out.Reports {
		add(r.Traffic+variantSuffix(r.Variant)+r.loadSuffix(), r.Frame, runFigures(r))
	}
	for _, m := range out.MLR {
		add(m.Traffic+variantSuffix(m.Variant), m.Frame, mlrFigures(m))
	}
	for _, s := range out.Searches {
		add(s.Traffic+variantSuffix(s.Variant), s.Frame, figures{"throughput_pps": s.ThroughputPPS})
	}
	for _, r := range out.RFC2544 {
		add(r.Traffic+variantSuffix(r.Variant)+" (RFC 2544)", r.Frame, rfc2544Figures(r))
	}
	var sums []FigureSummary
	for k, v := range values {
		sums = append(sums, FigureSummary{Traffic: k.traffic, Frame: k.frame, Figure: k.figure, Summary: stats.Summarize(v, level), Values: v})
	}
	sort.Slice(sums, func(i, j int) bool {
		a, b := sums[i], sums[j]
		if a.Traffic != b.Traffic {
			return a.Traffic < b.Traffic
		}
		if a.Frame != b.Frame {
			return a.Frame < b.Frame
		}
		return a.Figure < b.Figure
	})
	return sums
}

// variantSuffix tells the variants of a run apart (--variants).
func variantSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " (variant " + v + ")"
}

// loadSuffix tells runs at several loads apart (--latency-at).
func (r *Report) loadSuffix() string {
	if r.Load == "" {
		return ""
	}
	return " at " + r.Load
}
