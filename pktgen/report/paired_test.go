package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/stats"
)

// pairedFiles are two variants' router costs over n blocks: each block's
// level drifts by a factor of up to ±30% (the machine), B is A times
// (1+shift), and each value has 0.5% of noise of its own.
func pairedFiles(rng *rand.Rand, n int, shift float64, blocks bool) (a, b *ResultsFile) {
	a, b = NewResultsFile("a", true), NewResultsFile("b", true)
	k := FigureKey{Traffic: "t", Frame: 64, Figure: "router_ns_per_packet"}
	for i := range n {
		level := 2000 * (1 + 0.6*(rng.Float64()-0.5))
		blk := ""
		if blocks {
			blk = fmt.Sprintf("run/%d", i)
		}
		a.Figures[k] = append(a.Figures[k], level*(1+0.005*rng.NormFloat64()))
		b.Figures[k] = append(b.Figures[k], level*(1+shift)*(1+0.005*rng.NormFloat64()))
		a.Blocks[k], b.Blocks[k] = append(a.Blocks[k], blk), append(b.Blocks[k], blk)
	}
	return a, b
}

// TestPairedSeesThroughDrift: a 3% change under ±30% drift between
// blocks is found pair by pair (interval near +3%, excluding 0), decided
// as B slower (a cost went up), while the same values without their
// blocks, compared as medians, are not significant.
func TestPairedSeesThroughDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	a, b := pairedFiles(rng, 20, 0.03, true)
	c, err := Compare(a, b, false)
	if err != nil {
		t.Fatal(err)
	}
	ch := c.Changes[0]
	if !ch.Paired || ch.Pairs != 20 || ch.ChangeLow <= 0 || ch.ChangePct < 2.5 || ch.ChangePct > 3.5 || !strings.HasPrefix(c.Method, "paired") {
		t.Errorf("paired change %+v, method %q", ch, c.Method)
	}
	plan := stats.Plan{Looks: []int{10, 20}, Alpha: 0.01, Margin: 0.01, Power: 0.9}
	out, err := c.Decide(FigureKey{Traffic: "t", Frame: 64, Figure: "router_ns_per_packet"}, plan, true)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Decision; out != stats.Different || d.Faster >= 0 || !strings.HasPrefix(d.Decision, "B is 2.") || !strings.Contains(d.Decision, "slower") || d.MDE <= 0 || d.MDE > 1 {
		t.Errorf("decision %q (%+v)", d.Decision, d)
	}
	ua, ub := pairedFiles(rand.New(rand.NewPCG(3, 3)), 20, 0.03, false)
	uc, err := Compare(ua, ub, false)
	if err != nil {
		t.Fatal(err)
	}
	if u := uc.Changes[0]; u.Paired || u.Significant || !strings.HasPrefix(uc.Method, "unpaired") {
		t.Errorf("unpaired: %+v, method %q", u, uc.Method)
	}
}

// TestPairedSame: A against A within a 1% margin decides "same", and
// says so with the interval inside the margin.
func TestPairedSame(t *testing.T) {
	a, b := pairedFiles(rand.New(rand.NewPCG(4, 4)), 20, 0, true)
	c, err := Compare(a, b, false)
	if err != nil {
		t.Fatal(err)
	}
	plan := stats.Plan{Looks: []int{10, 20}, Alpha: 0.01, Margin: 0.01, Power: 0.9}
	out, err := c.Decide(FigureKey{Traffic: "t", Frame: 64, Figure: "router_ns_per_packet"}, plan, false)
	d := c.Decision
	if err != nil || out != stats.Same || d.CILow <= -1 || d.CIHigh >= 1 || !strings.HasPrefix(d.Decision, "no change larger than the margin of 1%") {
		t.Errorf("%v %q %+v", err, d.Decision, d)
	}
	if _, err := c.Decide(FigureKey{Traffic: "t", Frame: 64, Figure: "pps"}, plan, false); err == nil {
		t.Error("a figure the comparison does not have was decided on")
	}
}

// TestInconclusiveSaysHowManyMore: too few pairs for a small change say
// how many more would decide.
func TestInconclusiveSaysHowManyMore(t *testing.T) {
	a, b := pairedFiles(rand.New(rand.NewPCG(5, 5)), 8, 0.004, true)
	c, _ := Compare(a, b, false)
	plan := stats.Plan{Looks: []int{8}, Alpha: 0.01, Margin: 0.002, Power: 0.9}
	out, _ := c.Decide(FigureKey{Traffic: "t", Frame: 64, Figure: "router_ns_per_packet"}, plan, true)
	if d := c.Decision; out != stats.Inconclusive || d.MorePairs <= 0 || !strings.Contains(d.Decision, fmt.Sprintf("about %d more pairs", d.MorePairs)) {
		t.Errorf("%q %+v", d.Decision, d)
	}
}

// TestMainFigure: the cost per packet before the rate, the smallest
// frame first.
func TestMainFigure(t *testing.T) {
	c := &Comparison{Changes: []Change{{Traffic: "t", Frame: 128, Figure: "pps"}, {Traffic: "t", Frame: 1518, Figure: "router_ns_per_packet"}, {Traffic: "t", Frame: 64, Figure: "router_ns_per_packet"}}}
	if k, ok := c.MainFigure(); !ok || k.Figure != "router_ns_per_packet" || k.Frame != 64 {
		t.Errorf("%+v", k)
	}
	c.Changes = c.Changes[:1]
	if k, _ := c.MainFigure(); k.Figure != "pps" {
		t.Errorf("%+v", k)
	}
	if !LowerIsBetter("router_ns_per_packet") || !LowerIsBetter("router_relative_cost") || LowerIsBetter("pps") || math.IsNaN(pctOfLog(0)) {
		t.Error("LowerIsBetter")
	}
}

// TestPercentileOfFew: the bootstrap's interval of a figure whose
// resamples gave one ratio (a loss that is mostly 0) is that ratio, not
// an index out of range.
func TestPercentileOfFew(t *testing.T) {
	if lo, hi := percentile95([]float64{4}); lo != 4 || hi != 4 {
		t.Errorf("%g .. %g", lo, hi)
	}
	x := make([]float64, 1000)
	for i := range x {
		x[i] = float64(999 - i)
	}
	if lo, hi := percentile95(x); lo != 25 || hi != 974 {
		t.Errorf("%g .. %g", lo, hi)
	}
}
