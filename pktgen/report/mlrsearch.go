package report

import (
	"fmt"
	"io"
	"time"

	"github.com/nslab/nslab/pktgen/stall"
)

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
	Block      string        `json:"block,omitempty"`   // see Report.Block
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

// PathLossRatio is what the path dropped of a run's packets, as a ratio
// of those sent: the loss, or the named drops where an impairment's
// copies made up for some of it. Searches judge trials by it.
func (r *Report) PathLossRatio() float64 {
	if lost := max(r.Loss, int64(r.NamedDrops)); r.Sent > 0 && lost > 0 {
		return float64(lost) / float64(r.Sent)
	}
	return 0
}

// ShortfallTolerance is how far below its intended load a run may send
// before the frames it did not send count as lost (see LossAgainst).
const ShortfallTolerance = 0.01

// LossAgainst is the run's loss ratio against an intended load (pps):
// the path's loss, or, when the engine sent more than ShortfallTolerance
// below that load, the share of the intended frames that did not arrive,
// the unsent ones included. A trial at a load the sender did not offer
// cannot show that the path forwards it. load 0 (as fast as the engine
// goes) is judged on what was sent.
func (r *Report) LossAgainst(load float64) float64 {
	path := r.PathLossRatio()
	intended := load * r.Elapsed.Seconds()
	if load <= 0 || intended <= 0 || float64(r.Sent) >= intended*(1-ShortfallTolerance) {
		return path
	}
	return max(path, 1-(1-path)*float64(r.Sent)/intended)
}

// SentPPS is the rate the engine sent at.
func (r *Report) SentPPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Sent) / r.Elapsed.Seconds()
}

// writeMLR renders MLRsearch results (table or markdown): each goal's
// bounds and conditional throughput per frame size, the noise, then
// every trial.
func writeMLR(w io.Writer, format string, rs []*MLRResult) error {
	t := newTabular(w, format)
	for i, r := range rs {
		head := fmt.Sprintf("MLRsearch (%s) of %d-byte frames%s, %s: %d trials in %.1f s; the engine's top rate %.0f pps (warm-up, discarded): %s",
			r.Draft, r.Frame, variantSuffix(r.Variant), r.Engine, len(r.Trials), r.Duration.Seconds(), r.MaxLoadPPS, r.Bottleneck)
		if i == 0 {
			t.title(head)
		} else {
			t.section(head)
		}
		t.header("goal", "loss", "exceed", "final", "sum", "width", "lower bound pps", "upper bound pps", "conditional throughput pps")
		for _, g := range r.Goals {
			upper := f0(g.UpperBoundPPS)
			if g.UpperBoundPPS == 0 {
				upper = "none (top rate passed)"
			}
			t.row(g.Name, fmt.Sprintf("%g%%", 100*g.LossRatio), fmt.Sprintf("%g%%", 100*g.ExceedRatio), fmt.Sprintf("%gs", g.FinalTrialS),
				fmt.Sprintf("%gs", g.DurationSumS), fmt.Sprintf("%g%%", 100*g.Width), f0(g.LowerBoundPPS), upper, f0(g.ConditionalThroughputPPS))
		}
		t.section(r.Noise.lines())
		t.section("trials: loss % of load is what the load asked for over the trial and did not arrive, frames the sender did not send included (so a trial with sent = received can show loss)")
		t.header("load pps", "duration", "sent pps", "sent", "received", "loss % of load", "steal %", "stalls (longest)", "bottleneck")
		for _, tr := range r.Trials {
			load := f0(tr.LoadPPS)
			if tr.Warmup {
				load = "max (warm-up)"
			}
			t.row(load, fmt.Sprintf("%gs", tr.DurationS), f0(tr.Report.SentPPS()), fmt.Sprint(tr.Report.Sent), fmt.Sprint(tr.Report.Received), fmt.Sprintf("%.3f", 100*tr.LossRatio),
				fmt.Sprintf("%.1f", runSteal(tr.Report)), stallCell(tr.Report), tr.Report.Bottleneck)
		}
	}
	return t.done()
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
	// From the stall watch (see Report.Stalls): trials in which a CPU of
	// the run stalled, lossy trials that had a stall (losses that
	// coincide with one), lossless trials that had one, and the longest
	// and total stall time over the search's trials.
	Probed            int           `json:"probed_trials"`
	WithStall         int           `json:"trials_with_stall"`
	LossyWithStall    int           `json:"lossy_trials_with_stall"`
	LosslessWithStall int           `json:"lossless_trials_with_stall"`
	LongestStall      time.Duration `json:"longest_stall_ns"`
	StallTime         time.Duration `json:"stall_time_ns"`
	ProbedTime        time.Duration `json:"probed_time_ns"` // the trials' engine time the watch covered
}

// NoiseOf sums the steal of a search's trials.
func NoiseOf(trials []MLRTrial) Noise {
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

// lines is the noise in a line or two: steal, then the stall watch.
func (nz Noise) lines() string {
	s := fmt.Sprintf("noise: the hypervisor took time (steal) from the run's CPUs in %d of %d trials (at most %.1f%% of a CPU, %.2f%% on average); %d of the %d lossy trials had steal",
		nz.WithSteal, nz.Trials, nz.MaxStealPct, nz.MeanStealPct, nz.LossyWithSteal, nz.Lossy)
	if nz.Probed == 0 {
		return s
	}
	return s + fmt.Sprintf("\nnoise: the run's CPUs stalled (taken away: a hard timer's interrupt came %v late or more) in %d of %d trials, %v in %v of trials (longest %v); %d of the %d lossy trials had a stall, and %d lossless ones",
		stall.DefaultThreshold, nz.WithStall, nz.Probed, nz.StallTime.Round(time.Millisecond), nz.ProbedTime.Round(time.Millisecond), nz.LongestStall.Round(100*time.Microsecond),
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
