package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/nslab/nslab/pktgen/stats"
)

// Paired comparisons: bench --variants measures its variants in blocks,
// one trial of each back to back in a random order, and every result
// carries its block. A figure that both sides measured in the same
// blocks is compared pair by pair: the change is the Hodges-Lehmann
// estimate of the pairs' log ratios with the exact Wilcoxon signed-rank
// interval, so that the machine's drift between blocks cancels. Values
// measured apart (two bench --out files) have no pairs, and are compared
// by their medians with the Mann-Whitney U test.

// minPairs is the fewest pairs compared pair by pair: with fewer the
// signed-rank test cannot reach p < 0.05.
const minPairs = 6

const (
	unpairedMethod = "unpaired (measured apart): medians; change interval: bootstrap (10000 resamples) percentile 95% of the ratio of medians; p: two-sided Mann-Whitney U"
	pairedMethod   = "paired by block (measured back to back, order random in each block): change: Hodges-Lehmann estimate of the pairs' log ratios; 95% interval: exact Wilcoxon signed-rank; p: two-sided signed-rank (figures without pairs: " + unpairedMethod + ")"
)

// logRatios are log(b/a) of figure k over the blocks both files measured
// it in, a block's several values by their geometric mean; nil when a
// value is not above 0 or has no block.
func logRatios(a, b *ResultsFile, k FigureKey) []float64 {
	la, lb := byBlock(a, k), byBlock(b, k)
	if la == nil || lb == nil {
		return nil
	}
	var d []float64
	for _, blk := range slices.Sorted(maps.Keys(la)) {
		if y, ok := lb[blk]; ok {
			d = append(d, y-la[blk])
		}
	}
	return d
}

// byBlock is the mean log of figure k per block.
func byBlock(rf *ResultsFile, k FigureKey) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	blocks := rf.Blocks[k]
	for i, v := range rf.Figures[k] {
		if i >= len(blocks) || blocks[i] == "" || !(v > 0) {
			return nil
		}
		sum[blocks[i]] += math.Log(v)
		n[blocks[i]]++
	}
	for b := range sum {
		sum[b] /= float64(n[b])
	}
	return sum
}

// pairedChange is the change from the pairs' log ratios d.
func (ch *Change) pairedChange(d []float64) {
	ch.Paired, ch.Pairs, ch.logRatios = true, len(d), d
	ch.ChangePct = pctOfLog(stats.HodgesLehmann(d))
	ci := stats.SignedRankCI(d, 1-Significance)
	ch.ChangeLow, ch.ChangeHigh = pctOfLog(ci.Low), pctOfLog(ci.High)
	_, ch.P = stats.SignedRank(d)
	ch.Significant = ch.P < Significance
}

// pctOfLog is a log ratio as a change in percent.
func pctOfLog(x float64) float64 { return 100 * math.Expm1(x) }

// LowerIsBetter says whether a smaller value of a figure is the better
// (a cost, a loss, a latency) rather than the larger (a rate).
func LowerIsBetter(figure string) bool {
	for _, s := range []string{"ns_per_packet", "relative_cost", "loss", "latency", "back_to_back", "buffer_time"} {
		if strings.Contains(figure, s) {
			return true
		}
	}
	return false
}

// MainFigure is the figure a comparison decides on when none is named:
// the most sensitive it has (measured on our machines: the router's cost
// per packet, then the rate received, a search's throughput, an
// MLRsearch's first goal), at its smallest frame.
func (c *Comparison) MainFigure() (FigureKey, bool) {
	prefs := []func(string) bool{
		func(f string) bool { return f == "router_ns_per_packet" },
		func(f string) bool { return f == "pps" },
		func(f string) bool { return f == "throughput_pps" },
		func(f string) bool { return strings.HasSuffix(f, " conditional_throughput_pps") },
	}
	for _, want := range prefs {
		best, found := FigureKey{}, false
		for _, x := range c.Changes {
			if want(x.Figure) && (!found || x.Frame < best.Frame) {
				best, found = FigureKey{Traffic: x.Traffic, Frame: x.Frame, Figure: x.Figure}, true
			}
		}
		if found {
			return best, true
		}
	}
	return FigureKey{}, false
}

// Decision is the answer of a comparison on its main figure: different
// (faster or slower), the same within the margin, or inconclusive, with
// the interval it rests on and the smallest change it could have seen.
// Percentages are of the figure's value, B against A.
type Decision struct {
	Method   string  `json:"method"`
	Traffic  string  `json:"traffic"`
	Frame    int     `json:"frame"`
	Figure   string  `json:"figure"`
	Pairs    int     `json:"pairs"`
	Looks    []int   `json:"looks,omitempty"` // the pair counts it looked at
	Look     int     `json:"look,omitempty"`  // the look that decided, 1-based
	Estimate float64 `json:"estimate"`        // change, %
	CILow    float64 `json:"ci_low"`          // %
	CIHigh   float64 `json:"ci_high"`         // %
	CILevel  float64 `json:"ci_level"`
	// The bootstrap interval of the median pair at the same level: a
	// cross-check of the signed-rank interval that assumes no symmetry.
	BootstrapLow  float64 `json:"bootstrap_ci_low"`
	BootstrapHigh float64 `json:"bootstrap_ci_high"`
	P             float64 `json:"p_value"`
	Margin        float64 `json:"margin"` // %: "no change" means none larger
	// Outcome is different, same or inconclusive; Decision says it in a
	// sentence, Faster by how much B is faster (negative: slower).
	Outcome  string  `json:"outcome"`
	Decision string  `json:"decision"`
	Faster   float64 `json:"faster_pct"`
	// MDE is the smallest change these pairs detect with 90% power at the
	// level spent; PairSD the spread of one pair's log ratio, in %.
	MDE       float64 `json:"mde"`
	PairSD    float64 `json:"pair_sd_pct"`
	MorePairs int     `json:"more_pairs,omitempty"`
	Lower     bool    `json:"lower_is_better"`
	// Setup is how the pairs were measured ("duet at 100kpps",
	// "sequential pairs at full load (no rate)"), with what replaced the
	// set-up asked for and why; FigureReason why this figure was chosen;
	// Validity why it can (or cannot) show the variants' difference here.
	Setup        string `json:"setup,omitempty"`
	FigureReason string `json:"figure_reason,omitempty"`
	Validity     string `json:"validity,omitempty"`
	// CannotTell says why the decision is cannot tell: the figure is
	// pinned in this set-up, or no positive control showed it moves.
	CannotTell string `json:"cannot_tell,omitempty"`
	// Control is the positive control that lets "no change" be said: a
	// known cost added to A, and whether this set-up saw it.
	Control *Control `json:"positive_control,omitempty"`
	// FullLoad is, for a comparison asked at full load and measured at a
	// rate the routers hold instead (Setup says why), what the pairs at
	// full load said of the rate forwarded: information beside the
	// decision.
	FullLoad *Decision `json:"full_load,omitempty"`
}

// CannotTellWith turns the decision into "cannot tell with this figure",
// for why: the figure cannot show the difference, or nothing showed it
// can. The measured change stays, as what was measured.
func (d *Decision) CannotTellWith(why string) {
	d.Outcome, d.CannotTell = stats.CannotTell, why
	d.Decision = d.sentence()
}

// Decide makes the comparison's decision on the change of figure
// (traffic, frame) under plan (its Margin a fraction: 0.03 for 3%); last
// says no more pairs will come. It returns the outcome (stats.MeasureMore
// while the plan wants more), and fills c.Decision. Without pairs, the
// change's 95% interval decides (different, same, or inconclusive).
func (c *Comparison) Decide(k FigureKey, plan stats.Plan, last bool) (string, error) {
	i := slices.IndexFunc(c.Changes, func(x Change) bool {
		return x.Traffic == k.Traffic && x.Frame == k.Frame && x.Figure == k.Figure
	})
	if i < 0 {
		return "", fmt.Errorf("no figure %s of traffic %s at %d bytes to decide on", k.Figure, k.Traffic, k.Frame)
	}
	ch := c.Changes[i]
	d := &Decision{Traffic: k.Traffic, Frame: k.Frame, Figure: k.Figure, Margin: 100 * plan.Margin, Lower: LowerIsBetter(k.Figure)}
	margin := math.Log1p(plan.Margin)
	if ch.Paired {
		p := plan
		p.Margin = margin
		s := p.Decide(ch.logRatios, last)
		d.Method = fmt.Sprintf("paired: signed-rank interval at %.1f%% (alpha %.3g spread over %d looks at %v pairs, Bonferroni), bootstrap of the median pair as a cross-check", 100*s.CI.Level, plan.Alpha, len(plan.Looks), plan.Looks)
		d.Pairs, d.Looks, d.Look, d.P, d.Outcome, d.MorePairs = s.Pairs, plan.Looks, s.Look, s.P, s.Outcome, s.More
		d.Estimate, d.CILow, d.CIHigh, d.CILevel = pctOfLog(s.Estimate), pctOfLog(s.CI.Low), pctOfLog(s.CI.High), s.CI.Level
		d.BootstrapLow, d.BootstrapHigh = pctOfLog(s.Bootstrap.Low), pctOfLog(s.Bootstrap.High)
		d.MDE, d.PairSD = pctOfLog(s.MDE), pctOfLog(s.SD)
	} else {
		d.Method = "unpaired (measured apart): the change's 95% bootstrap interval against the margin (beyond it: different; inside it: same)"
		d.Pairs, d.P, d.Estimate, d.CILow, d.CIHigh, d.CILevel = min(ch.OldN, ch.NewN), ch.P, ch.ChangePct, ch.ChangeLow, ch.ChangeHigh, 1-Significance
		switch {
		case ch.ChangeLow > d.Margin || ch.ChangeHigh < -d.Margin:
			d.Outcome = stats.Different
		case ch.ChangeLow > -d.Margin && ch.ChangeHigh < d.Margin:
			d.Outcome = stats.Same
		default:
			d.Outcome = stats.Inconclusive
		}
	}
	d.Faster = d.Estimate
	if d.Lower {
		d.Faster = 100 * (1/(1+d.Estimate/100) - 1)
	}
	d.Decision = d.sentence()
	c.Decision = d
	if len(ch.ZeroOld)+len(ch.ZeroNew) > 0 {
		var which []string
		if len(ch.ZeroOld) > 0 {
			which = append(which, "A's trials "+trialList(ch.ZeroOld, ch.OldN))
		}
		if len(ch.ZeroNew) > 0 {
			which = append(which, "B's trials "+trialList(ch.ZeroNew, ch.NewN))
		}
		d.CannotTellWith(fmt.Sprintf("%s measured %s 0 or nothing (an outage, or a failed trial), which no ratio can weigh", strings.Join(which, " and "), k.Figure))
		return d.Outcome, nil
	}
	return d.Outcome, nil
}

// sentence is the decision in words.
func (d *Decision) sentence() string {
	in := fmt.Sprintf("%s %+.2f%%, %.1f%% interval %+.2f%% .. %+.2f%%", d.Figure, d.Estimate, 100*d.CILevel, d.CILow, d.CIHigh)
	switch d.Outcome {
	case stats.Different:
		word := "faster"
		if d.Faster < 0 {
			word = "slower"
		}
		return fmt.Sprintf("B is %.2f%% %s, beyond the margin of %.3g%% (%s)", math.Abs(d.Faster), word, d.Margin, in)
	case stats.Same:
		return fmt.Sprintf("no change larger than the margin of %.3g%% (%s)", d.Margin, in)
	case stats.CannotTell:
		return fmt.Sprintf("cannot tell with this figure: %s (measured: %s)", d.CannotTell, in)
	case stats.Inconclusive:
		if d.MorePairs > 0 {
			return fmt.Sprintf("cannot tell whether the change is beyond the margin of %.3g%%: about %d more pairs would decide (%s; one pair spreads %.2f%%)", d.Margin, d.MorePairs, in, d.PairSD)
		}
		return fmt.Sprintf("cannot tell whether the change is beyond the margin of %.3g%%: measure more (%s)", d.Margin, in)
	}
	return fmt.Sprintf("measuring: %s", in)
}
