package search

import (
	"context"
	"fmt"
	"time"

	"github.com/nslab/nslab/pktgen/mlr"
	"github.com/nslab/nslab/pktgen/report"
)

// MLRsearch of a bench's traffic (pktgen/mlr): NDR and PDR, or any goals,
// in one search whose trials are the bench's measured runs, each with its
// per-hop accounting, verdict and (with Options.Latency) latency.

// Draft names the MLRsearch specification nslab implements.
const Draft = "draft-ietf-bmwg-mlrsearch-15 (RFC 9971)"

// DefaultGoals are NDR and PDR as nslab searches them by default. Each is
// the draft's TST009-like goal scaled to this kind of machine: an exceed
// ratio of 50% (a load is a lower bound when at least half of its trial
// time lost no more than the goal: a CPU that stalls now and then for
// milliseconds, as these 2-vCPU VMs do, loses a trial here and there
// without moving the result); 1 s final trials (the draft's "1s final"
// goal, CSIT's default) and a 7 s duration sum (so at least 4 full-length
// trials agree at each bound), 250 ms initial trials, and a width of 2%,
// below the run-to-run spread (about 10%) the old search showed.
var DefaultGoals = []mlr.Goal{
	{Name: "NDR", LossRatio: 0, ExceedRatio: 0.5, FinalTrial: time.Second, DurationSum: 7 * time.Second, Width: 0.02, InitialTrial: 250 * time.Millisecond},
	{Name: "PDR", LossRatio: 0.005, ExceedRatio: 0.5, FinalTrial: time.Second, DurationSum: 7 * time.Second, Width: 0.02, InitialTrial: 250 * time.Millisecond},
}

// MLROptions tune an MLRsearch.
type MLROptions struct {
	Goals  []mlr.Goal    // nil: DefaultGoals
	Warmup time.Duration // the discarded first trial at the top rate; 0: 1 s
}

// MLR runs MLRsearch over r's trials into res (whose run and frame the
// caller named): a warm-up at the top rate, then every goal of o.
func MLR(ctx context.Context, r Runner, o MLROptions, res *report.MLRResult) error {
	if o.Goals == nil {
		o.Goals = DefaultGoals
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	start := time.Now()
	res.Draft = Draft
	defer r.Quiet()()
	threads := float64(r.Threads())
	trial := func(ctx context.Context, load float64, d time.Duration) (mlr.Trial, error) {
		rep, err := r.Trial(ctx, uint64(load/threads), 0, d, AsAsked)
		if err != nil {
			return mlr.Trial{}, err
		}
		// Judged against the load asked for: frames the sender did not
		// send count as lost (report.LossAgainst).
		tr := mlr.Trial{Effective: rep.Elapsed, LossRatio: rep.LossAgainst(load)}
		res.Trials = append(res.Trials, report.MLRTrial{LoadPPS: load, DurationS: d.Seconds(), LossRatio: tr.LossRatio, Report: rep})
		return tr, nil
	}
	top, err := trial(ctx, 0, o.Warmup) // load 0: as fast as the engine goes
	if err != nil {
		return fmt.Errorf("warm-up at the top rate: %w", err)
	}
	w := &res.Trials[0]
	w.Warmup, res.Bottleneck = true, w.Report.Bottleneck
	res.MaxLoadPPS = float64(w.Report.Sent) / max(top.Effective.Seconds(), 1e-9)
	s := &mlr.Search{Goals: o.Goals, MaxLoad: float64(int64(res.MaxLoadPPS)), Measure: trial}
	out, err := s.Run(ctx)
	res.Duration = time.Since(start)
	res.Noise = report.NoiseOf(res.Trials)
	if out != nil {
		for _, g := range out.Goals {
			res.Goals = append(res.Goals, report.GoalOutcome{Name: g.Goal.Name, LossRatio: g.Goal.LossRatio, ExceedRatio: g.Goal.ExceedRatio,
				FinalTrialS: g.Goal.FinalTrial.Seconds(), DurationSumS: g.Goal.DurationSum.Seconds(), Width: g.Goal.Width,
				LowerBoundPPS: g.LowerBound, UpperBoundPPS: g.UpperBound, ConditionalThroughputPPS: g.ConditionalThroughput})
		}
	}
	return err
}
