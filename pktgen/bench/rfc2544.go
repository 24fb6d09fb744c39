package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/nslab/nslab/pktgen/stats"
)

// RFC 2544's benchmarks of one frame size, in one call (bench --rfc2544):
// throughput (section 26.1, found by MLRsearch), latency at the
// throughput rate (26.2), the frame loss rate from the top rate down in
// 10% steps until two steps lose nothing (26.3), and back-to-back frames
// at the top rate (26.4, with RFC 9004's procedure and correction).
//
// On veth there is no medium whose frame rate sets a maximum: the top
// rate here is the engine's sending rate through this path (MLRsearch's
// warm-up), and RFC 2544's "maximum frame rate" and RFC 9004's "Max
// Theoretical Frame Rate" are taken as that.

// RFC2544Options tune the benchmarks.
type RFC2544Options struct {
	MLR MLROptions // the throughput search; its first goal with loss 0 (NDR) gives the throughput
	// B2BTrials is how many times the back-to-back search is repeated (RFC
	// 9004 asks for 50); 0: 5.
	B2BTrials int
	// B2BLongest is the longest burst tried, as time at the top rate (RFC
	// 9004 asks for at least 2 s); 0: 2 s.
	B2BLongest time.Duration
}

// RFC2544Result is the four benchmarks of one frame size.
type RFC2544Result struct {
	Lab     string `json:"lab"`
	Traffic string `json:"traffic"`
	Variant string `json:"variant,omitempty"`
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

// RFC2544 runs the four benchmarks on frame.
func (b *Bench) RFC2544(ctx context.Context, frame int, o RFC2544Options) (*RFC2544Result, error) {
	start := time.Now()
	res := &RFC2544Result{Lab: b.run.Lab.Name, Traffic: b.t.Name, Variant: b.opts.Variant, Frame: frame, Engine: b.eng.Name()}
	defer func() { res.Duration = time.Since(start) }()
	m, err := b.MLRSearch(ctx, frame, o.MLR)
	res.Throughput.Search = m
	if err != nil {
		return res, fmt.Errorf("throughput (RFC 2544 26.1): %w", err)
	}
	res.TopRatePPS = m.MaxLoadPPS
	b.throughput(res, m, frame)
	final := time.Second
	for _, g := range m.Goals {
		final = time.Duration(g.FinalTrialS * float64(time.Second))
		break
	}
	if res.Latency, err = b.atRate(ctx, frame, res.Throughput.PPS, 0, final, true); err != nil {
		return res, fmt.Errorf("latency (RFC 2544 26.2): %w", err)
	}
	res.Latency.Load = fmt.Sprintf("the throughput, %.0f pps", res.Throughput.PPS)
	if err := b.frameLoss(ctx, res, frame, final); err != nil {
		return res, fmt.Errorf("frame loss rate (RFC 2544 26.3): %w", err)
	}
	res.BackToBack, err = b.backToBack(ctx, res, frame, o)
	if err != nil {
		return res, fmt.Errorf("back-to-back frames (RFC 2544 26.4): %w", err)
	}
	return res, nil
}

// throughput takes section 26.1's figure from the search: the lower
// bound of its first zero-loss goal (the highest load shown to lose
// nothing), else of its first goal.
func (b *Bench) throughput(res *RFC2544Result, m *MLRResult, frame int) {
	if len(m.Goals) == 0 {
		return
	}
	g := m.Goals[0]
	for _, x := range m.Goals {
		if x.LossRatio == 0 {
			g = x
			break
		}
	}
	res.Throughput.PPS = g.LowerBoundPPS
	res.Throughput.MbpsL2, res.Throughput.MbpsL1 = mbps(g.LowerBoundPPS, float64(frame))
	res.Throughput.Method = fmt.Sprintf("MLRsearch (%s) goal %s (loss %g%%, exceed %g%%): its lower bound", m.Draft, g.Name, 100*g.LossRatio, 100*g.ExceedRatio)
}

// atRate measures frame at pps (0: as fast as the engine goes), for d or
// count packets in all, with or without reading every packet.
func (b *Bench) atRate(ctx context.Context, frame int, pps float64, count uint64, d time.Duration, latency bool) (*Report, error) {
	saved := b.opts.Latency
	b.opts.Latency = latency
	defer func() { b.opts.Latency = saved }()
	threads := uint64(max(1, b.t.Threads, len(b.t.CPUs)))
	tt := *b.t
	tt.Count, tt.Duration, tt.RatePPS, tt.RateMbps = (count+threads-1)/threads, d, uint64(pps)/threads, 0
	if count > 0 {
		tt.Duration = 0
	}
	if pps > 0 && tt.RatePPS == 0 {
		tt.RatePPS = 1
	}
	return b.measure(ctx, &tt, frame)
}

// frameLoss is section 26.3: trials from 100% of the top rate down in
// 10% steps, until two steps in a row lose nothing.
func (b *Bench) frameLoss(ctx context.Context, res *RFC2544Result, frame int, d time.Duration) error {
	clean := 0
	for pct := 100; pct >= 10 && clean < 2; pct -= 10 {
		load := res.TopRatePPS * float64(pct) / 100
		rep, err := b.atRate(ctx, frame, load, 0, d, false)
		if err != nil {
			return err
		}
		rep.Load = fmt.Sprintf("%d%% of the top rate", pct)
		step := FrameLossStep{PercentOfTop: float64(pct), OfferedPPS: load, Report: rep}
		if rep.Sent > 0 {
			step.LossPct = 100 * float64(rep.Loss) / float64(rep.Sent)
		}
		res.FrameLoss = append(res.FrameLoss, step)
		if rep.PathLossRatio() == 0 {
			clean++
		} else {
			clean = 0
		}
	}
	return nil
}

// backToBack is section 26.4: the longest burst at the top rate that the
// path forwards whole, searched B2BTrials times.
func (b *Bench) backToBack(ctx context.Context, res *RFC2544Result, frame int, o RFC2544Options) (*BackToBack, error) {
	bb := &BackToBack{RatePPS: res.TopRatePPS}
	if len(res.FrameLoss) > 0 && res.FrameLoss[0].Report.PathLossRatio() == 0 {
		bb.Skipped = "the path lost nothing at the top rate, so no burst at that rate fills a buffer (RFC 9004 section 4): the buffer is not measurable this way"
		return bb, nil
	}
	trials, longest := o.B2BTrials, o.B2BLongest
	if trials <= 0 {
		trials = 5
	}
	if longest <= 0 {
		longest = 2 * time.Second
	}
	most := int64(res.TopRatePPS * longest.Seconds())
	var found []float64
	for range trials {
		s, err := b.longestBurst(ctx, frame, most)
		if err != nil {
			return bb, err
		}
		bb.Searches = append(bb.Searches, s)
		found = append(found, float64(s.LongestFrames))
		bb.Censored = bb.Censored || s.LongestFrames >= most
	}
	sum := stats.Summarize(found, SummaryLevel)
	bb.MeanFrames, bb.MinFrames, bb.MaxFrames = mean(found), int64(sum.Min), int64(sum.Max)
	b2bCorrection(bb, res.Throughput.PPS)
	return bb, nil
}

// b2bCorrection is RFC 9004's calculation: the implied buffer time is
// the mean burst at the top rate R; of a burst of B frames the path
// forwarded T x B/R at its throughput T while it lasted, so it held
// B - T x B/R, which at R is the corrected buffer time.
func b2bCorrection(bb *BackToBack, throughput float64) {
	if bb.RatePPS <= 0 {
		return
	}
	bb.ImpliedBufferTimeS = bb.MeanFrames / bb.RatePPS
	bb.BufferedFrames = math.Max(0, bb.MeanFrames-throughput*bb.ImpliedBufferTimeS)
	bb.CorrectedBufferTimeS = bb.BufferedFrames / bb.RatePPS
}

// longestBurst bisects the burst length (frames at the top rate) between
// none and most, to within 1%: each trial one burst, judged whole or
// not.
func (b *Bench) longestBurst(ctx context.Context, frame int, most int64) (B2BSearch, error) {
	var s B2BSearch
	burst := func(n int64) (bool, error) {
		rep, err := b.atRate(ctx, frame, 0, uint64(n), 0, false)
		if err != nil {
			return false, err
		}
		lost := max(rep.Loss, int64(rep.NamedDrops))
		s.Bursts = append(s.Bursts, B2BBurst{Frames: int64(rep.Sent), Lost: lost, RatePPS: float64(rep.Sent) / max(rep.Elapsed.Seconds(), 1e-9)})
		return lost == 0, nil
	}
	whole, err := burst(most)
	if err != nil || whole {
		s.LongestFrames = most
		return s, err
	}
	lo, hi := int64(0), most
	for hi-lo > max(1, lo/100) {
		mid := lo + (hi-lo)/2
		ok, err := burst(mid)
		if err != nil {
			return s, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	s.LongestFrames = lo
	return s, nil
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
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
	t.header("frame size (B)", "burst rate (frames/s)", "searches", "mean frames", "min..max", "implied buffer time", "frames held", "corrected buffer time")
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
