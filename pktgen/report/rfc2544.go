package report

import (
	"fmt"
	"io"
	"math"
	"time"
)

// RFC2544Result is the four benchmarks of one frame size.
type RFC2544Result struct {
	Lab     string `json:"lab"`
	Traffic string `json:"traffic"`
	Variant string `json:"variant,omitempty"`
	Block   string `json:"block,omitempty"` // see Report.Block
	Frame   int    `json:"frame"`
	Engine  string `json:"engine"`
	// TopRatePPS is the engine's sending rate through the path at full
	// speed: the maximum frame rate the benchmarks start from.
	TopRatePPS float64           `json:"top_rate_pps"`
	Throughput RFC2544Throughput `json:"throughput"`
	Latency    *Report           `json:"latency"` // the run at the throughput rate, every packet read
	FrameLoss  []FrameLossStep   `json:"frame_loss"`
	BackToBack *BackToBack       `json:"back_to_back"`
	Duration   time.Duration     `json:"duration_ns"`
}

// RFC2544Throughput is section 26.1's figure.
type RFC2544Throughput struct {
	PPS    float64 `json:"pps"`
	MbpsL2 float64 `json:"mbps_l2"`
	MbpsL1 float64 `json:"mbps_l1"`
	// Method says which bound of which goal it is.
	Method string     `json:"method"`
	Search *MLRResult `json:"search"`
}

// FrameLossStep is one step of section 26.3.
type FrameLossStep struct {
	PercentOfTop float64 `json:"percent_of_top"`
	OfferedPPS   float64 `json:"offered_pps"`
	LossPct      float64 `json:"loss_pct"` // (sent - received) / sent, RFC 2544's frame loss rate
	Report       *Report `json:"report"`
}

// BackToBack is section 26.4 as RFC 9004 updates it.
type BackToBack struct {
	RatePPS float64 `json:"rate_pps"` // the bursts' rate: the top rate
	// Skipped says why there was no search (RFC 9004 section 4: with no
	// loss at the top rate, no buffer is ever filled).
	Skipped  string      `json:"skipped,omitempty"`
	Searches []B2BSearch `json:"searches,omitempty"`
	// The longest burst without loss over the searches.
	MeanFrames float64 `json:"mean_frames"`
	MinFrames  int64   `json:"min_frames"`
	MaxFrames  int64   `json:"max_frames"`
	// Censored: some search's longest burst tried lost nothing (the
	// buffer is at least that).
	Censored bool `json:"censored,omitempty"`
	// ImpliedBufferTimeS is RFC 9004's implied DUT buffer time: the mean
	// burst over the top rate. BufferedFrames takes off the frames the
	// path forwarded during the burst at its throughput, and
	// CorrectedBufferTimeS is those at the top rate (RFC 9004's corrected
	// DUT buffer time).
	ImpliedBufferTimeS   float64 `json:"implied_buffer_time_s"`
	BufferedFrames       float64 `json:"buffered_frames"`
	CorrectedBufferTimeS float64 `json:"corrected_buffer_time_s"`
}

// B2BSearch is one search for the longest burst without loss.
type B2BSearch struct {
	LongestFrames int64      `json:"longest_frames"`
	Bursts        []B2BBurst `json:"bursts"`
}

// B2BBurst is one burst trial.
type B2BBurst struct {
	Frames  int64   `json:"frames"` // sent
	Lost    int64   `json:"lost"`
	RatePPS float64 `json:"rate_pps"` // the rate it was sent at
}

// WriteRFC2544 prints the benchmarks as RFC 2544's section 26 lays them
// out, a table per benchmark with a row per frame size (format "table"
// or "markdown").
func WriteRFC2544(w io.Writer, format string, rs []*RFC2544Result) error {
	if len(rs) == 0 {
		return nil
	}
	t := newTabular(w, format)
	r0 := rs[0]
	t.title(fmt.Sprintf("RFC 2544 benchmarks: lab %s%s, traffic %s, engine %s; the top rate is the engine's sending rate through the path at full speed (veth has no medium rate)",
		r0.Lab, variantSuffix(r0.Variant), r0.Traffic, r0.Engine))
	t.section("26.1 Throughput: " + r0.Throughput.Method)
	t.header("frame size (B)", "throughput (frames/s)", "Mb/s L2", "Mb/s L1", "% of top rate", "top rate (frames/s)")
	for _, r := range rs {
		t.row(fmt.Sprint(r.Frame), f0(r.Throughput.PPS), f1(r.Throughput.MbpsL2), f1(r.Throughput.MbpsL1), f1(100*r.Throughput.PPS/math.Max(r.TopRatePPS, 1)), f0(r.TopRatePPS))
	}
	method := "not measured"
	if l := r0.Latency; l != nil && l.Latency != nil {
		method = l.Latency.Method
	}
	t.section("26.2 Latency at the throughput rate: one-way, " + method)
	t.header("frame size (B)", "rate (frames/s)", "samples", "min", "p50", "p99", "max", "mean", "jitter (RFC 3550)")
	for _, r := range rs {
		if l := r.Latency; l != nil && l.Latency != nil && l.Latency.Samples > 0 {
			x := l.Latency
			t.row(fmt.Sprint(r.Frame), f0(l.PPS), fmt.Sprint(x.Samples), nsString(float64(x.MinNs)), nsString(float64(x.P50Ns)), nsString(float64(x.P99Ns)),
				nsString(float64(x.MaxNs)), nsString(x.MeanNs), nsString(x.JitterNs))
		}
	}
	t.section("26.3 Frame loss rate: from the top rate down in 10% steps until two steps lose nothing")
	t.header("frame size (B)", "% of top rate", "offered (frames/s)", "sent", "received", "frame loss rate %")
	for _, r := range rs {
		for _, s := range r.FrameLoss {
			t.row(fmt.Sprint(r.Frame), f0(s.PercentOfTop), f0(s.OfferedPPS), fmt.Sprint(s.Report.Sent), fmt.Sprint(s.Report.Received), fmt.Sprintf("%.3f", s.LossPct))
		}
	}
	t.section("26.4 Back-to-back frames at the top rate (RFC 9004): the longest burst forwarded whole, bisected to 1%, per search")
	t.header("frame size (B)", "rate (frames/s)", "searches", "mean frames", "min..max", "implied buffer", "frames held", "corrected buffer")
	for _, r := range rs {
		bb := r.BackToBack
		switch {
		case bb == nil:
		case bb.Skipped != "":
			t.row(fmt.Sprint(r.Frame), f0(bb.RatePPS), "0", "-", "-", "-", "-", "skipped: "+bb.Skipped)
		default:
			rng := fmt.Sprintf("%d..%d", bb.MinFrames, bb.MaxFrames)
			if bb.Censored {
				rng += " (some search's longest burst tried lost nothing: at least that)"
			}
			t.row(fmt.Sprint(r.Frame), f0(bb.RatePPS), fmt.Sprint(len(bb.Searches)), f0(bb.MeanFrames), rng, nsString(1e9*bb.ImpliedBufferTimeS), f0(bb.BufferedFrames), nsString(1e9*bb.CorrectedBufferTimeS))
		}
	}
	return t.done()
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
