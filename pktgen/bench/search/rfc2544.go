package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/nslab/nslab/pktgen/report"
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

// RFC2544 runs the four benchmarks over r's trials into res (whose run
// and frame the caller named).
func RFC2544(ctx context.Context, r Runner, o RFC2544Options, res *report.RFC2544Result) error {
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	m := &report.MLRResult{Lab: res.Lab, Traffic: res.Traffic, Variant: res.Variant, Block: res.Block, Frame: res.Frame, Engine: res.Engine}
	err := MLR(ctx, r, o.MLR, m)
	res.Throughput.Search = m
	if err != nil {
		return fmt.Errorf("throughput (RFC 2544 26.1): %w", err)
	}
	res.TopRatePPS = m.MaxLoadPPS
	throughput(res, m)
	final := time.Second
	for _, g := range m.Goals {
		final = time.Duration(g.FinalTrialS * float64(time.Second))
		break
	}
	if res.Latency, err = atRate(ctx, r, res.Throughput.PPS, 0, final, Read); err != nil {
		return fmt.Errorf("latency (RFC 2544 26.2): %w", err)
	}
	res.Latency.Load = fmt.Sprintf("the throughput, %.0f pps", res.Throughput.PPS)
	if err := frameLoss(ctx, r, res, final); err != nil {
		return fmt.Errorf("frame loss rate (RFC 2544 26.3): %w", err)
	}
	res.BackToBack, err = backToBack(ctx, r, res, o)
	if err != nil {
		return fmt.Errorf("back-to-back frames (RFC 2544 26.4): %w", err)
	}
	return nil
}

// throughput takes section 26.1's figure from the search: the lower
// bound of its first zero-loss goal (the highest load shown to lose
// nothing), else of its first goal.
func throughput(res *report.RFC2544Result, m *report.MLRResult) {
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
	res.Throughput.MbpsL2, res.Throughput.MbpsL1 = report.Mbps(g.LowerBoundPPS, float64(res.Frame))
	res.Throughput.Method = fmt.Sprintf("MLRsearch (%s) goal %s (loss %g%%, exceed %g%%): its lower bound", m.Draft, g.Name, 100*g.LossRatio, 100*g.ExceedRatio)
}

// atRate measures at pps for the whole traffic (0: as fast as the sender
// goes), for d or count packets in all, reading every packet or not.
func atRate(ctx context.Context, r Runner, pps float64, count uint64, d time.Duration, l Latency) (*report.Report, error) {
	threads := uint64(r.Threads())
	rate := uint64(pps) / threads
	if count > 0 {
		d = 0
	}
	if pps > 0 && rate == 0 {
		rate = 1
	}
	return r.Trial(ctx, rate, (count+threads-1)/threads, d, l)
}

// frameLoss is section 26.3: trials from 100% of the top rate down in
// 10% steps, until two steps in a row lose nothing.
func frameLoss(ctx context.Context, r Runner, res *report.RFC2544Result, d time.Duration) error {
	clean := 0
	for pct := 100; pct >= 10 && clean < 2; pct -= 10 {
		load := res.TopRatePPS * float64(pct) / 100
		rep, err := atRate(ctx, r, load, 0, d, Skip)
		if err != nil {
			return err
		}
		rep.Load = fmt.Sprintf("%d%% of the top rate", pct)
		step := report.FrameLossStep{PercentOfTop: float64(pct), OfferedPPS: load, Report: rep}
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
func backToBack(ctx context.Context, r Runner, res *report.RFC2544Result, o RFC2544Options) (*report.BackToBack, error) {
	bb := &report.BackToBack{RatePPS: res.TopRatePPS}
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
		s, err := longestBurst(ctx, r, most)
		if err != nil {
			return bb, err
		}
		bb.Searches = append(bb.Searches, s)
		found = append(found, float64(s.LongestFrames))
		bb.Censored = bb.Censored || s.LongestFrames >= most
	}
	bb.MeanFrames, bb.MinFrames, bb.MaxFrames = mean(found), int64(slices.Min(found)), int64(slices.Max(found))
	b2bCorrection(bb, res.Throughput.PPS)
	return bb, nil
}

// b2bCorrection is RFC 9004's calculation: the implied buffer time is
// the mean burst at the top rate R; of a burst of B frames the path
// forwarded T x B/R at its throughput T while it lasted, so it held
// B - T x B/R, which at R is the corrected buffer time.
func b2bCorrection(bb *report.BackToBack, throughput float64) {
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
func longestBurst(ctx context.Context, r Runner, most int64) (report.B2BSearch, error) {
	var s report.B2BSearch
	burst := func(n int64) (bool, error) {
		rep, err := atRate(ctx, r, 0, uint64(n), 0, Skip)
		if err != nil {
			return false, err
		}
		lost := max(rep.Loss, int64(rep.NamedDrops))
		s.Bursts = append(s.Bursts, report.B2BBurst{Frames: int64(rep.Sent), Lost: lost, RatePPS: float64(rep.Sent) / max(rep.Elapsed.Seconds(), 1e-9)})
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
