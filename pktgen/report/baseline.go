package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/nslab/nslab/pktgen/stats"
)

// A baseline is a results file (bench --save-baseline) a later run is
// held to (bench --baseline): the same lab file, kernel, engine,
// placement and nslab, each figure with its trials. AgainstBaseline
// decides on the figure that survives a machine's drift best.

// BaselineFigures are the figures a baseline decides on, in order of
// preference: the router's cost relative to the receiver's, measured in
// the same trial (a machine that drifts slower moves both), then its
// absolute cost, then the receiver's rate.
var BaselineFigures = []string{"router_relative_cost", "router_ns_per_packet", "pps"}

// BaselineVerdict is a run held to a baseline.
type BaselineVerdict struct {
	Baseline    string   `json:"baseline"`
	Traffic     string   `json:"traffic"`
	Frame       int      `json:"frame"`
	Figure      string   `json:"figure"`
	FigureNote  string   `json:"figure_note"`
	BaseN       int      `json:"baseline_trials"`
	NewN        int      `json:"trials"`
	BaseMedian  float64  `json:"baseline_median"`
	NewMedian   float64  `json:"median"`
	Slower      float64  `json:"slower_pct"` // estimate: how much slower today is, in %
	SlowerLow   float64  `json:"slower_ci_low_pct"`
	SlowerHigh  float64  `json:"slower_ci_high_pct"`
	CILevel     float64  `json:"ci_level"`
	MDE         float64  `json:"mde_pct"` // the smallest slowdown these trials detect with 90% power
	Margin      float64  `json:"margin_pct"`
	Verdict     string   `json:"verdict"` // PASS, FAIL or INCONCLUSIVE
	Why         string   `json:"why"`
	Differences []string `json:"environment_differences,omitempty"` // forced past
	// Paired: the baseline's lab file and today's were measured in this
	// run, pair by pair (see PairedVerdict), in Setup; Changed are the
	// nodes where they differ, Drift how far the baseline's lab measured
	// today is from the baseline's own figure, in % (the machine's drift
	// since and the set-up's difference, both cancelled by the pairs).
	Paired  bool     `json:"paired,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Setup   string   `json:"setup,omitempty"`
	Drift   *float64 `json:"baseline_lab_drift_pct,omitempty"`
	// ZeroTrials and BaseZeroTrials are today's and the baseline's trials
	// (1-based) whose figure was 0 or none: never dropped (see zeros).
	ZeroTrials     []int `json:"zero_trials,omitempty"`
	BaseZeroTrials []int `json:"baseline_zero_trials,omitempty"`
}

// Verdicts of a run held to a baseline.
const (
	Pass         = "PASS"
	Fail         = "FAIL"
	Inconclusive = "INCONCLUSIVE"
)

// AgainstBaseline holds today's results to the baseline's: refused when
// they were measured differently (lab file, kernel, engine, placement,
// nslab) unless force. margin is in percent: a slowdown within it is no
// failure.
//
// The slowdown is the Hodges-Lehmann shift of the trials' logarithms
// (every today's trial against every baseline's), with the interval that
// inverts the Mann-Whitney test. FAIL: its 95% interval lies beyond the
// margin (a slowdown within it is no failure, and a run's trials share
// that run's state: the interval of one run's trials is narrower than
// the runs' own spread). PASS: the interval lies below the margin (today
// is no slower than the margin allows). INCONCLUSIVE otherwise: the trials
// cannot tell (their minimum detectable effect is said).
func AgainstBaseline(base, today *ResultsFile, margin float64, force bool) (*BaselineVerdict, error) {
	diff := Differences(base, today)
	if len(diff) > 0 && !force {
		return nil, &MismatchError{Differences: diff}
	}
	k, ok := baselineKey(base, today)
	if !ok {
		return nil, fmt.Errorf("%s and today's run share no traffic run, frame size and figure (%v)", base.Path, BaselineFigures)
	}
	old, cur := base.Figures[k], today.Figures[k]
	v := &BaselineVerdict{Baseline: base.Path, Traffic: k.Traffic, Frame: k.Frame, Figure: k.Figure, FigureNote: figureNote(k.Figure),
		BaseN: len(old), NewN: len(cur), BaseMedian: stats.Median(old), NewMedian: stats.Median(cur), CILevel: 0.95, Margin: margin, Differences: diff}
	sign := 1.0
	if !LowerIsBetter(k.Figure) {
		sign = -1 // a lower rate is slower
	}
	// The shift of the log values (Hodges-Lehmann, Mann-Whitney's
	// interval) as a ratio: the trials' typical change, each against each.
	la, lb := logs(old), logs(cur)
	est, iv := stats.Shift(la, lb, v.CILevel)
	toPct := func(x float64) float64 { return sign * 100 * (math.Exp(x) - 1) }
	v.Slower = toPct(est)
	v.SlowerLow, v.SlowerHigh = min(toPct(iv.Low), toPct(iv.High)), max(toPct(iv.Low), toPct(iv.High))
	v.MDE = unpairedMDE(la, lb)
	v.decide()
	v.ZeroTrials, v.BaseZeroTrials = ZeroTrials(cur), ZeroTrials(old)
	v.zeros(!LowerIsBetter(k.Figure))
	return v, nil
}

// zeros overrides the verdict when a trial's figure was 0 or none (an
// outage, or a trial that measured nothing), which the logarithms cannot
// hold: such trials are never dropped to judge on the rest. Today's rate
// at 0 is an outage, slower than any margin: FAIL. A cost of 0 today, or
// any 0 in the baseline, is no figure at all: INCONCLUSIVE. Either way
// the trials are named.
func (v *BaselineVerdict) zeros(rate bool) {
	// What is said of the trials that measured something: none, when every
	// trial was 0.
	others := func(s string) string {
		if len(v.ZeroTrials) == v.NewN {
			return ""
		}
		return s
	}
	switch {
	case len(v.ZeroTrials) > 0 && rate:
		v.Verdict = Fail
		v.Why = fmt.Sprintf("today's trials %s measured %s 0: an outage, slower than any margin%s", trialList(v.ZeroTrials, v.NewN), v.Figure, others(" (the other trials were not judged without them)"))
	case len(v.ZeroTrials) > 0:
		v.Verdict = Inconclusive
		v.Why = fmt.Sprintf("today's trials %s measured no %s (0): cannot tell%s", trialList(v.ZeroTrials, v.NewN), v.Figure, others(", and the other trials are not judged without them"))
	case len(v.BaseZeroTrials) > 0:
		v.Verdict = Inconclusive
		v.Why = fmt.Sprintf("the baseline's trials %s measured %s 0: cannot tell against a baseline with an outage (save it again)", trialList(v.BaseZeroTrials, v.BaseN), v.Figure)
	}
}

// PairedVerdict holds today's lab to a baseline whose lab file differs
// from today's only where a variant reaches (changed: the nodes): the run
// measured the baseline's lab file, as a variant, and today's pair by pair,
// and c compares them, today's the new side (its decision made with a
// plan whose changes count only beyond the margin). The pairs share
// what the machine does meanwhile, so its drift since the baseline was
// saved cancels; the baseline's own figure says how large that drift is.
func PairedVerdict(base *ResultsFile, c *Comparison, margin float64, changed []string) (*BaselineVerdict, error) {
	d := c.Decision
	if d == nil {
		return nil, fmt.Errorf("the comparison with %s's lab file decided nothing", base.Path)
	}
	v := &BaselineVerdict{Baseline: base.Path, Traffic: d.Traffic, Frame: d.Frame, Figure: d.Figure, BaseN: d.Pairs, NewN: d.Pairs,
		CILevel: d.CILevel, MDE: d.MDE, Margin: margin, Paired: true, Changed: changed, Setup: d.Setup}
	v.FigureNote = fmt.Sprintf("paired: the baseline's lab file (as variant baseline: it differs in %s) and this one, measured in this run pair by pair (%s), so the machine's drift since the baseline cancels in each pair; %s",
		strings.Join(changed, ", "), d.Setup, figureNote(d.Figure))
	k := FigureKey{Traffic: d.Traffic, Frame: d.Frame, Figure: d.Figure}
	for _, ch := range c.Changes {
		if ch.Traffic == k.Traffic && ch.Frame == k.Frame && ch.Figure == k.Figure {
			v.BaseMedian, v.NewMedian = ch.Old, ch.New
		}
	}
	if old := base.Figures[k]; len(old) > 0 && v.BaseMedian > 0 {
		drift := 100 * (v.BaseMedian/stats.Median(old) - 1)
		v.Drift = &drift
	}
	if d.Lower {
		v.Slower, v.SlowerLow, v.SlowerHigh = d.Estimate, d.CILow, d.CIHigh
	} else { // a lower rate is slower
		v.Slower, v.SlowerLow, v.SlowerHigh = -d.Estimate, -d.CIHigh, -d.CILow
	}
	if d.Outcome == stats.CannotTell {
		v.Verdict, v.Why = Inconclusive, "cannot tell: "+d.CannotTell
		return v, nil
	}
	v.decide()
	return v, nil
}

// decide sets the verdict and says why.
func (v *BaselineVerdict) decide() {
	switch {
	case math.IsNaN(v.Slower) || len(slices.DeleteFunc([]float64{v.SlowerLow, v.SlowerHigh}, math.IsNaN)) < 2:
		v.Verdict, v.Why = Inconclusive, "the figure is 0 in some trials: no ratio to it"
	case v.SlowerLow > v.Margin:
		v.Verdict = Fail
		v.Why = fmt.Sprintf("%.2f%% slower (%.3g%% interval %.2f%%..%.2f%%), beyond the margin of %g%%", v.Slower, 100*v.CILevel, v.SlowerLow, v.SlowerHigh, v.Margin)
	case v.SlowerHigh < v.Margin:
		v.Verdict = Pass
		v.Why = fmt.Sprintf("at most %.2f%% slower (%.3g%% interval %.2f%%..%.2f%%), within the margin of %g%%", v.SlowerHigh, 100*v.CILevel, v.SlowerLow, v.SlowerHigh, v.Margin)
	default:
		v.Verdict = Inconclusive
		v.Why = fmt.Sprintf("%.2f%% slower, %.3g%% interval %.2f%%..%.2f%%: these trials detect %.2f%% (90%% power), the margin is %g%%; more trials (repeat) narrow it",
			v.Slower, 100*v.CILevel, v.SlowerLow, v.SlowerHigh, v.MDE, v.Margin)
	}
}

// baselineKey is the first figure of BaselineFigures both files hold,
// for the first traffic run and frame they share.
func baselineKey(base, today *ResultsFile) (FigureKey, bool) {
	for _, fig := range BaselineFigures {
		var keys []FigureKey
		for k := range base.Figures {
			if _, ok := today.Figures[k]; ok && k.Figure == fig && len(base.Figures[k]) > 1 && len(today.Figures[k]) > 1 {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			slices.SortFunc(keys, func(a, b FigureKey) int { return cmp.Or(strings.Compare(a.Traffic, b.Traffic), a.Frame-b.Frame) })
			return keys[0], true
		}
	}
	return FigureKey{}, false
}

// figureNote says why the figure decides.
func figureNote(fig string) string {
	switch fig {
	case "router_relative_cost":
		return "the router's cost per packet relative to the receiver's, both measured in each trial: a machine that drifts slower over a day moves both, so the ratio holds across runs where an absolute figure does not"
	case "router_ns_per_packet":
		return "the router's CPU time per packet: no relative cost was measured (a lab without a receiver's cost), so the machine's drift between the runs is in it"
	default:
		return "the receiver's rate: no router cost was measured, so the machine's drift between the runs is in it"
	}
}

// unpairedMDE is the smallest change, in percent, that trials of these
// spreads (logarithms) detect with 90% power in a two-sided test at 5%
// (stats.ShiftMDE), the spread pooled from each side's robust one.
func unpairedMDE(la, lb []float64) float64 {
	if len(la) < 2 || len(lb) < 2 {
		return math.Inf(1)
	}
	sa, sb := stats.RobustSD(la), stats.RobustSD(lb)
	s := math.Sqrt((sa*sa*float64(len(la)-1) + sb*sb*float64(len(lb)-1)) / float64(len(la)+len(lb)-2))
	return 100 * (math.Exp(stats.ShiftMDE(s, len(la), len(lb), 0.05, 0.9)) - 1)
}

func logs(x []float64) []float64 {
	var out []float64
	for _, v := range x {
		if v > 0 {
			out = append(out, math.Log(v))
		}
	}
	return out
}

// Write writes the verdict in a few lines.
func (v *BaselineVerdict) Write(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("\nagainst baseline %s: %s\n", v.Baseline, v.Verdict)
	if v.Paired {
		ew.printf("  %s, frame %d, %s: the baseline's lab measured today %.4g, this lab %.4g (medians of %d pairs)\n", v.Traffic, v.Frame, v.Figure, v.BaseMedian, v.NewMedian, v.NewN)
	} else {
		ew.printf("  %s, frame %d, %s: baseline median %.4g (%d trials), today %.4g (%d trials)\n", v.Traffic, v.Frame, v.Figure, v.BaseMedian, v.BaseN, v.NewMedian, v.NewN)
	}
	ew.printf("  %s\n", v.Why)
	ew.printf("  the figure: %s\n", v.FigureNote)
	if v.Drift != nil {
		ew.printf("  the baseline's lab measured in this run: %+.2f%% against the baseline's own median (the machine's drift since, and the set-up: %s here, the baseline's own; the pairs cancel both)\n", *v.Drift, v.Setup)
	}
	for _, d := range v.Differences {
		ew.printf("  measured differently (forced): %s\n", d)
	}
	return ew.err
}
