package stats

import (
	"fmt"
	"math"
)

// A sequential decision over paired differences (log ratios of B to A):
// the pairs are looked at a few times as they come (after 10, 20 and 40,
// say), each look at a share of the error rate (Bonferroni: alpha split
// evenly between the looks, so that the chance of calling a change that
// is not there stays at most alpha over the whole run), and it stops as
// soon as a look decides one of three outcomes, each meaning what it says:
//   - different: the look's signed-rank interval lies beyond the margin
//     (faster or slower by more than the margin). A shift the interval
//     shows to be real but inside the margin is not a change the user
//     asked about: a 0.11% shift under a 2% margin is never "slower";
//   - same: the interval lies inside ±margin (no change as large as the
//     margin, a shift inside it included; the interval is at a level of
//     1 - 2 alpha_k there, as in two one-sided tests);
//   - otherwise measure more; at the last look, inconclusive ("cannot
//     tell"), with the number of pairs that would decide at the spread
//     seen.
// The chance of "different" when the true change is inside the margin is
// at most alpha over the run (each look's interval misses the truth with
// probability alpha_k at most), and so is that of "same" when it is
// beyond.

// Outcomes of a decision.
const (
	Different    = "different"
	Same         = "same"
	Inconclusive = "inconclusive"
	MeasureMore  = "measure more"
	// CannotTell is said instead of a decision when the figure cannot
	// show the difference in the set-up measured (bench's validity rules),
	// or "no change" would rest on no evidence that it can.
	CannotTell = "cannot tell"
)

// Plan is how a sequential comparison runs: the pair counts it looks at
// (increasing; the last is the most it takes), the overall error rate,
// the margin of "no change" and the power its minimum detectable effect
// is given for. Margin is on the scale of the differences (log ratio:
// log(1.03) for 3%).
type Plan struct {
	Looks  []int
	Alpha  float64
	Margin float64
	Power  float64
	// Resamples is the bootstrap's resamples (0: 10000).
	Resamples int
}

// Decision is what a look (the last one made) said.
type Decision struct {
	Outcome  string   `json:"decision"`
	Pairs    int      `json:"pairs"`
	Look     int      `json:"look"` // 1-based
	Estimate float64  `json:"estimate"`
	CI       Interval `json:"ci"`
	// Bootstrap is the percentile bootstrap interval of the median at
	// the same level, a cross-check that assumes no symmetry.
	Bootstrap Interval `json:"bootstrap"`
	P         float64  `json:"p_value"`
	// AlphaLook is the error rate this look spent.
	AlphaLook float64 `json:"alpha_look"`
	// SD is the robust spread of the differences; MDE the smallest shift
	// that this many pairs detect with the plan's power at this look's
	// share of alpha.
	SD  float64 `json:"sd"`
	MDE float64 `json:"mde"`
	// More is, when inconclusive, about how many more pairs would decide
	// at this spread.
	More int `json:"more_pairs,omitempty"`
}

// LookAt is the 0-based look that n pairs reach, or -1 before the first.
func (p Plan) LookAt(n int) int {
	k := -1
	for i, l := range p.Looks {
		if n >= l {
			k = i
		}
	}
	return k
}

// Decide looks at the pairs d. last says that no more pairs will come
// (the most pairs, or the time, ran out): a look that does not decide is
// then inconclusive rather than measure more.
func (p Plan) Decide(d []float64, last bool) Decision {
	k := max(len(p.Looks), 1)
	a := p.Alpha / float64(k)
	look := p.LookAt(len(d))
	out := Decision{Pairs: len(d), Look: look + 1, AlphaLook: a, Estimate: HodgesLehmann(d), SD: RobustSD(d)}
	if out.SD == 0 {
		out.SD = SD(d)
	}
	out.MDE = MDE(out.SD, len(d), a, p.Power)
	_, out.P = SignedRank(d)
	out.CI = SignedRankCI(d, 1-a)
	out.Bootstrap = BootstrapMedianCI(d, 1-a, p.Resamples)
	eq := SignedRankCI(d, 1-2*a)
	switch {
	case len(d) < 6:
		out.Outcome = MeasureMore // fewer than 6 pairs cannot reach p < 0.05 two-sided
	case out.CI.Low > p.Margin || out.CI.High < -p.Margin:
		out.Outcome = Different
	case eq.Low > -p.Margin && eq.High < p.Margin:
		out.Outcome, out.CI = Same, eq
	default:
		out.Outcome = MeasureMore
	}
	if out.Outcome == MeasureMore && (last || look == len(p.Looks)-1) {
		out.Outcome = Inconclusive
		// To decide, the interval's half width must come under the
		// distance from the estimate to the margin (either side of it);
		// an estimate on the margin itself is given a tenth of it.
		effect := math.Max(math.Abs(p.Margin-math.Abs(out.Estimate)), p.Margin/10)
		out.More = max(PairsFor(out.SD, effect, a, 0.5)-len(d), 1)
	}
	return out
}

// Validate says what is wrong with a plan.
func (p Plan) Validate() error {
	if len(p.Looks) == 0 {
		return fmt.Errorf("no looks")
	}
	for i, l := range p.Looks {
		if l < 6 || (i > 0 && l <= p.Looks[i-1]) {
			return fmt.Errorf("looks %v: each at 6 pairs or more, increasing", p.Looks)
		}
	}
	if p.Alpha <= 0 || p.Alpha >= 1 || p.Margin <= 0 || p.Power <= 0 || p.Power >= 1 {
		return fmt.Errorf("alpha %g, margin %g, power %g: each between 0 and 1", p.Alpha, p.Margin, p.Power)
	}
	return nil
}
