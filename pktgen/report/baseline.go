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
	return v, nil
}

// decide sets the verdict and says why.
func (v *BaselineVerdict) decide() {
	switch {
	case math.IsNaN(v.Slower) || len(slices.DeleteFunc([]float64{v.SlowerLow, v.SlowerHigh}, math.IsNaN)) < 2:
		v.Verdict, v.Why = Inconclusive, "the figure is 0 in some trials: no ratio to it"
	case v.SlowerLow > v.Margin:
		v.Verdict = Fail
		v.Why = fmt.Sprintf("%.2f%% slower (%.0f%% interval %.2f%%..%.2f%%), beyond the margin of %g%%", v.Slower, 100*v.CILevel, v.SlowerLow, v.SlowerHigh, v.Margin)
	case v.SlowerHigh < v.Margin:
		v.Verdict = Pass
		v.Why = fmt.Sprintf("at most %.2f%% slower (%.0f%% interval %.2f%%..%.2f%%), within the margin of %g%%", v.SlowerHigh, 100*v.CILevel, v.SlowerLow, v.SlowerHigh, v.Margin)
	default:
		v.Verdict = Inconclusive
		v.Why = fmt.Sprintf("%.2f%% slower, %.0f%% interval %.2f%%..%.2f%%: these trials detect %.2f%% (90%% power), the margin is %g%%; more trials (--repeat) narrow it",
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
	ew.printf("  %s, frame %d, %s: baseline median %.4g (%d trials), today %.4g (%d trials)\n", v.Traffic, v.Frame, v.Figure, v.BaseMedian, v.BaseN, v.NewMedian, v.NewN)
	ew.printf("  %s\n", v.Why)
	ew.printf("  the figure: %s\n", v.FigureNote)
	for _, d := range v.Differences {
		ew.printf("  measured differently (--force): %s\n", d)
	}
	return ew.err
}
