package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/nslab/nslab/pktgen/mlr"
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

// GoalOutcome is one goal's result; its JSON names are the interface.
type GoalOutcome struct {
	Name                     string  `json:"name"`
	LossRatio                float64 `json:"loss_ratio"`
	ExceedRatio              float64 `json:"exceed_ratio"`
	FinalTrialS              float64 `json:"final_trial_s"`
	DurationSumS             float64 `json:"duration_sum_s"`
	Width                    float64 `json:"width"`
	LowerBoundPPS            float64 `json:"lower_bound_pps"`
	UpperBoundPPS            float64 `json:"upper_bound_pps"` // 0: none (the top rate was a lower bound)
	ConditionalThroughputPPS float64 `json:"conditional_throughput_pps"`
}

// MLRTrial is one trial of a search: the load it was measured at, for how
// long, its loss ratio, and its whole report.
type MLRTrial struct {
	LoadPPS   float64 `json:"load_pps"`
	DurationS float64 `json:"duration_s"`
	LossRatio float64 `json:"loss_ratio"`
	Warmup    bool    `json:"warmup,omitempty"`
	Report    *Report `json:"report"`
}

// MLRResult is an MLRsearch of one frame size.
type MLRResult struct {
	Lab        string        `json:"lab"`
	Traffic    string        `json:"traffic"`
	Variant    string        `json:"variant,omitempty"` // see Report.Variant
	Frame      int           `json:"frame"`
	Engine     string        `json:"engine"`
	Draft      string        `json:"draft"`
	MaxLoadPPS float64       `json:"max_load_pps"` // the warm-up's sending rate: the largest load tried
	Goals      []GoalOutcome `json:"goals"`
	Trials     []MLRTrial    `json:"trials"`
	Duration   time.Duration `json:"duration_ns"` // the whole search
	// Bottleneck is the warm-up's verdict: what limits the path at the
	// engine's top rate.
	Bottleneck string `json:"bottleneck"`
	// Noise is how noisy the machine was during the search.
	Noise Noise `json:"noise"`
}

// MLRSearch searches frame with MLRsearch.
func (b *Bench) MLRSearch(ctx context.Context, frame int, o MLROptions) (*MLRResult, error) {
	if o.Goals == nil {
		o.Goals = DefaultGoals
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	start := time.Now()
	res := &MLRResult{Lab: b.run.Lab.Name, Traffic: b.t.Name, Variant: b.opts.Variant, Frame: frame, Engine: b.eng.Name(), Draft: Draft}
	live := b.opts.Live
	b.opts.Live = nil
	defer func() { b.opts.Live = live }()
	threads := float64(max(1, b.t.Threads, len(b.t.CPUs)))
	trial := func(ctx context.Context, load float64, d time.Duration) (mlr.Trial, error) {
		tt := *b.t
		tt.Count, tt.Duration, tt.RatePPS, tt.RateMbps = 0, d, uint64(load/threads), 0
		rep, err := b.measure(ctx, &tt, frame)
		if err != nil {
			return mlr.Trial{}, err
		}
		tr := mlr.Trial{Effective: rep.Elapsed, LossRatio: rep.PathLossRatio()}
		res.Trials = append(res.Trials, MLRTrial{LoadPPS: load, DurationS: d.Seconds(), LossRatio: tr.LossRatio, Report: rep})
		return tr, nil
	}
	top, err := trial(ctx, 0, o.Warmup) // load 0: as fast as the engine goes
	if err != nil {
		return res, fmt.Errorf("warm-up at the top rate: %w", err)
	}
	w := &res.Trials[0]
	w.Warmup, res.Bottleneck = true, w.Report.Bottleneck
	res.MaxLoadPPS = float64(w.Report.Sent) / max(top.Effective.Seconds(), 1e-9)
	s := &mlr.Search{Goals: o.Goals, MaxLoad: float64(int64(res.MaxLoadPPS)), Measure: trial}
	out, err := s.Run(ctx)
	res.Duration = time.Since(start)
	res.Noise = noiseOf(res.Trials)
	if out != nil {
		for _, g := range out.Goals {
			res.Goals = append(res.Goals, GoalOutcome{Name: g.Goal.Name, LossRatio: g.Goal.LossRatio, ExceedRatio: g.Goal.ExceedRatio,
				FinalTrialS: g.Goal.FinalTrial.Seconds(), DurationSumS: g.Goal.DurationSum.Seconds(), Width: g.Goal.Width,
				LowerBoundPPS: g.LowerBound, UpperBoundPPS: g.UpperBound, ConditionalThroughputPPS: g.ConditionalThroughput})
		}
	}
	return res, err
}

// PathLossRatio is what the path dropped of a run's packets, as a ratio
// of those sent: the loss, or the named drops where an impairment's
// copies made up for some of it. Searches judge trials by it.
func (r *Report) PathLossRatio() float64 {
	if lost := max(r.Loss, int64(r.NamedDrops)); r.Sent > 0 && lost > 0 {
		return float64(lost) / float64(r.Sent)
	}
	return 0
}

// WriteMLR prints MLRsearch results: each goal's bounds and conditional
// throughput per frame size, then every trial.
func WriteMLR(w io.Writer, rs []*MLRResult) error {
	ew := &errWriter{w: w}
	for _, r := range rs {
		ew.printf("MLRsearch (%s) of %d-byte frames, %s: %d trials in %.1f s; the engine's top rate %.0f pps (warm-up, discarded): %s\n",
			r.Draft, r.Frame, r.Engine, len(r.Trials), r.Duration.Seconds(), r.MaxLoadPPS, r.Bottleneck)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "goal\tloss\texceed\tfinal\tsum\twidth\tlower bound pps\tupper bound pps\tconditional throughput pps\t")
		for _, g := range r.Goals {
			upper := fmt.Sprintf("%.0f", g.UpperBoundPPS)
			if g.UpperBoundPPS == 0 {
				upper = "none (top rate passed)"
			}
			fmt.Fprintf(tw, "%s\t%g%%\t%g%%\t%gs\t%gs\t%g%%\t%.0f\t%s\t%.0f\t\n", g.Name, 100*g.LossRatio, 100*g.ExceedRatio,
				g.FinalTrialS, g.DurationSumS, 100*g.Width, g.LowerBoundPPS, upper, g.ConditionalThroughputPPS)
		}
		tw.Flush()
		r.Noise.write(ew)
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\nload pps\tduration\tsent\treceived\tloss %\tsteal %\tstalls (longest)\t  bottleneck")
		for _, t := range r.Trials {
			load := fmt.Sprintf("%.0f", t.LoadPPS)
			if t.Warmup {
				load = "max (warm-up)"
			}
			fmt.Fprintf(tw, "%s\t%gs\t%d\t%d\t%.3f\t%.1f\t%s\t  %s\n", load, t.DurationS, t.Report.Sent, t.Report.Received, 100*t.LossRatio, runSteal(t.Report), stallCell(t.Report), t.Report.Bottleneck)
		}
		tw.Flush()
		ew.printf("\n")
	}
	return ew.err
}

// Noise is how much the hypervisor took from the CPUs a search ran on,
// trial by trial: each trial's steal time (from /proc/stat, in clock
// ticks of 10 ms, so a stall shorter than a tick may not show) on the
// CPUs the run placed something on (every CPU when nothing is placed).
type Noise struct {
	Trials         int     `json:"trials"`
	WithSteal      int     `json:"trials_with_steal"` // trials where some steal was counted
	Lossy          int     `json:"lossy_trials"`
	LossyWithSteal int     `json:"lossy_trials_with_steal"` // lossy trials that had steal: losses that may be the machine's
	MaxStealPct    float64 `json:"max_steal_pct"`           // the most of one CPU's time a trial lost to steal
	MeanStealPct   float64 `json:"mean_steal_pct"`
	// From the stall probe (see Report.Stalls): trials in which a CPU of
	// the run stalled, lossy trials that had a stall (losses that
	// coincide with one), lossless trials that had one, and the longest
	// and total stall time over the search's trials.
	Probed            int           `json:"probed_trials"`
	WithStall         int           `json:"trials_with_stall"`
	LossyWithStall    int           `json:"lossy_trials_with_stall"`
	LosslessWithStall int           `json:"lossless_trials_with_stall"`
	LongestStall      time.Duration `json:"longest_stall_ns"`
	StallTime         time.Duration `json:"stall_time_ns"`
	ProbedTime        time.Duration `json:"probed_time_ns"` // the trials' engine time the probe watched
}

// noiseOf sums the steal of a search's trials.
func noiseOf(trials []MLRTrial) Noise {
	var n Noise
	sum := 0.0
	for _, t := range trials {
		if t.Warmup || t.Report == nil {
			continue
		}
		n.Trials++
		steal := runSteal(t.Report)
		sum += steal
		n.MaxStealPct = max(n.MaxStealPct, steal)
		lossy := t.LossRatio > 0
		if lossy {
			n.Lossy++
		}
		n.addStalls(t.Report, lossy)
		if steal > 0 {
			n.WithSteal++
			if lossy {
				n.LossyWithSteal++
			}
		}
	}
	if n.Trials > 0 {
		n.MeanStealPct = sum / float64(n.Trials)
	}
	return n
}

// addStalls counts a trial's stalls.
func (n *Noise) addStalls(r *Report, lossy bool) {
	s := r.Stalls
	if s == nil {
		return
	}
	n.Probed++
	n.ProbedTime += r.Ended.Sub(r.Started)
	n.StallTime += s.TotalNs
	n.LongestStall = max(n.LongestStall, s.LongestNs)
	if s.Stalls == 0 {
		return
	}
	n.WithStall++
	if lossy {
		n.LossyWithStall++
	} else {
		n.LosslessWithStall++
	}
}

// runSteal is the largest steal share of the run's CPUs (those with a
// role; all when none has one).
func runSteal(r *Report) float64 {
	steal, roles := 0.0, false
	for _, c := range r.CPU {
		if len(c.Roles) > 0 {
			roles = true
		}
	}
	for _, c := range r.CPU {
		if !roles || len(c.Roles) > 0 {
			steal = max(steal, c.Steal)
		}
	}
	return steal
}

// write is the noise in two lines: steal, then the stall probe.
func (nz Noise) write(ew *errWriter) {
	ew.printf("noise: the hypervisor took time (steal) from the run's CPUs in %d of %d trials (at most %.1f%% of a CPU, %.2f%% on average); %d of the %d lossy trials had steal\n",
		nz.WithSteal, nz.Trials, nz.MaxStealPct, nz.MeanStealPct, nz.LossyWithSteal, nz.Lossy)
	if nz.Probed == 0 {
		return
	}
	ew.printf("noise: the run's CPUs stalled (taken away: a hard timer's interrupt came 1 ms late or more) in %d of %d trials, %v in %v of trials (longest %v); %d of the %d lossy trials had a stall, and %d lossless ones\n",
		nz.WithStall, nz.Probed, nz.StallTime.Round(time.Millisecond), nz.ProbedTime.Round(time.Millisecond), nz.LongestStall.Round(100*time.Microsecond),
		nz.LossyWithStall, nz.Lossy, nz.LosslessWithStall)
}

// stallCell is a trial's stalls for the trial table.
func stallCell(r *Report) string {
	s := r.Stalls
	switch {
	case s == nil:
		return "-"
	case s.Stalls == 0:
		return "0"
	}
	return fmt.Sprintf("%d (%v)", s.Stalls, s.LongestNs.Round(100*time.Microsecond))
}
