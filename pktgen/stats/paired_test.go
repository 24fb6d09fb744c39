package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestSignedRankAgainstR: the values R 4.2's wilcox.test gives for the
// same differences (exact = TRUE, conf.int = TRUE): V, the two-sided p,
// the (pseudo)median and the interval. The first data are R's own
// example (?wilcox.test: x - y, depression scores).
//
//	d <- c(1.83,0.50,1.62,2.48,1.68,1.88,1.55,3.06,1.30) - c(0.878,0.647,0.598,2.05,1.06,1.29,1.06,3.14,1.29)
//	wilcox.test(d, conf.int = TRUE)                   # V 40, p 0.0390625, 0.46, 0.01 .. 0.786
//	wilcox.test(d, conf.int = TRUE, conf.level = 0.9) # 0.175 .. 0.726
func TestSignedRankAgainstR(t *testing.T) {
	x := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	y := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	d2 := []float64{-0.031, 0.012, 0.044, -0.007, 0.021, 0.058, 0.003, -0.015, 0.036, 0.027, 0.049, -0.022, 0.018, 0.061, 0.009, 0.040, -0.004, 0.033, 0.025, 0.052}
	for _, c := range []struct {
		d                 []float64
		level             float64
		v, p, est, lo, hi float64
	}{
		{d, 0.95, 40, 0.0390625, 0.46, 0.01, 0.786},
		{d, 0.90, 40, 0.0390625, 0.46, 0.175, 0.726},
		{d2, 0.95, 178, 0.004859924316, 0.02125, 0.007, 0.035},
		{d2, 0.99, 178, 0.004859924316, 0.02125, 0.0025, 0.0395},
	} {
		v, p := SignedRank(c.d)
		ci := SignedRankCI(c.d, c.level)
		est := HodgesLehmann(c.d)
		if v != c.v || !near(p, c.p, 1e-9) || !near(est, c.est, 1e-9) || !near(ci.Low, c.lo, 1e-9) || !near(ci.High, c.hi, 1e-9) {
			t.Errorf("n=%d level %g: V %g p %.10g est %g ci %g..%g; R: V %g p %.10g est %g ci %g..%g", len(c.d), c.level, v, p, est, ci.Low, ci.High, c.v, c.p, c.est, c.lo, c.hi)
		}
		if ci.Level < c.level {
			t.Errorf("coverage %g below the level %g", ci.Level, c.level)
		}
	}
}

// TestSignedRankNormalAgainstR: with ties, R's normal approximation with
// tie and continuity corrections: wilcox.test(c(1,2,2,3,-1,4,5,5,6,-2,7,8),
// exact = FALSE) gives V 72.5, p 0.009466587372.
func TestSignedRankNormalAgainstR(t *testing.T) {
	v, p := SignedRank([]float64{1, 2, 2, 3, -1, 4, 5, 5, 6, -2, 7, 8})
	if v != 72.5 || !near(p, 0.009466587372, 1e-9) {
		t.Errorf("V %g p %.10g, R: 72.5, 0.009466587372", v, p)
	}
}

// TestNormalQuantileAgainstR: qnorm(c(0.975, 0.9, 0.05/6, 1e-10)).
func TestNormalQuantileAgainstR(t *testing.T) {
	for p, want := range map[float64]float64{0.975: 1.95996398454005, 0.9: 1.2815515655446, 0.05 / 6: -2.39397979981851, 1e-10: -6.36134090240406} {
		if got := NormalQuantile(p); !near(got, want, 1e-12) {
			t.Errorf("NormalQuantile(%g) = %.15g, R %.15g", p, got, want)
		}
	}
}

// TestBootstrapMedianCovers: the bootstrap interval holds the median and
// lies within the data's range.
func TestBootstrapMedianCovers(t *testing.T) {
	d := []float64{0.3, -0.1, 0.2, 0.5, 0.1, 0.4, 0.0, 0.25, 0.15, 0.35}
	ci := BootstrapMedianCI(d, 0.95, 0)
	if m := Median(d); ci.Low > m || ci.High < m || ci.Low < -0.1 || ci.High > 0.5 {
		t.Errorf("bootstrap %+v, median %g", ci, m)
	}
}

// simulate runs the plan on normal differences of the given shift (sd
// 1) until a look decides, and returns the outcome.
func simulate(p Plan, rng *rand.Rand, shift float64) string {
	var d []float64
	for _, l := range p.Looks {
		for len(d) < l {
			d = append(d, shift+rng.NormFloat64())
		}
		if dec := p.Decide(d, false); dec.Outcome != MeasureMore {
			return dec.Outcome
		}
	}
	return Inconclusive
}

// TestSequentialFalseAlarms: 1000 simulated A against A (no shift): the
// plan calls "different" in at most its alpha of them (with three
// standard errors of slack for the simulation's own noise).
func TestSequentialFalseAlarms(t *testing.T) {
	if testing.Short() {
		t.Skip("one goroutine, fixed input: slow under -race (make test-unit runs -short -race), which has nothing here to see; the runs without -short run it")
	}
	p := Plan{Looks: []int{10, 20, 40}, Alpha: 0.05, Margin: 0.5, Power: 0.9, Resamples: 100}
	rng := rand.New(rand.NewPCG(7, 7))
	const runs = 1000
	n := map[string]int{}
	for range runs {
		n[simulate(p, rng, 0)]++
	}
	rate := float64(n[Different]) / runs
	t.Logf("A/A outcomes over %d: %v", runs, n)
	if rate > p.Alpha+3*math.Sqrt(p.Alpha*(1-p.Alpha)/runs) {
		t.Errorf("false alarm rate %.3f, above alpha %g", rate, p.Alpha)
	}
	if n[Same] < runs/2 {
		t.Errorf("only %d of %d A/A comparisons found no change beyond the margin", n[Same], runs)
	}
}

// TestSequentialPower: a shift of the minimum detectable effect that the
// last look gives (40 pairs, its share of alpha, 90% power) is found in
// about 90% of 1000 simulations (the earlier looks can only add), with
// the right sign; half of it is found less often.
func TestSequentialPower(t *testing.T) {
	if testing.Short() {
		t.Skip("one goroutine, fixed input: slow under -race (make test-unit runs -short -race), which has nothing here to see; the runs without -short run it")
	}
	p := Plan{Looks: []int{10, 20, 40}, Alpha: 0.05, Margin: 0.01, Power: 0.9, Resamples: 100}
	mde := MDE(1, 40, p.Alpha/3, p.Power)
	rng := rand.New(rand.NewPCG(9, 9))
	const runs = 1000
	found := map[float64]int{}
	for _, shift := range []float64{mde, mde / 2} {
		for range runs {
			if simulate(p, rng, shift) == Different {
				found[shift]++
			}
		}
	}
	power := float64(found[mde]) / runs
	t.Logf("MDE %.3f sd: found %d of %d; half of it: %d", mde, found[mde], runs, found[mde/2])
	if power < 0.86 || power > 0.97 {
		t.Errorf("power at the MDE %.3f, planned 0.9", power)
	}
	if found[mde/2] >= found[mde] {
		t.Errorf("half the MDE found as often (%d) as the MDE (%d)", found[mde/2], found[mde])
	}
}

// TestPairsForInvertsMDE: the pairs PairsFor asks for detect the effect.
func TestPairsForInvertsMDE(t *testing.T) {
	n := PairsFor(0.05, 0.02, 0.05, 0.9)
	if MDE(0.05, n, 0.05, 0.9) > 0.02 || MDE(0.05, n-1, 0.05, 0.9) <= 0.02 {
		t.Errorf("PairsFor gave %d", n)
	}
}

// TestSequentialMargin: a shift at the margin's edge (the worst case
// inside it) is called different (a false "slower", or a baseline's false
// FAIL) in no more than alpha of 1000 simulations; one of twice the
// margin and 1.5 standard deviations is called different in most of 200.
func TestSequentialMargin(t *testing.T) {
	if testing.Short() {
		t.Skip("one goroutine, fixed input: slow under -race (make test-unit runs -short -race), which has nothing here to see; the runs without -short run it")
	}
	p := Plan{Looks: []int{10, 20, 40}, Alpha: 0.05, Margin: 0.5, Power: 0.9, Resamples: 100}
	rng := rand.New(rand.NewPCG(11, 11))
	big := 2*p.Margin + 0.5
	called := map[float64]int{}
	for shift, runs := range map[float64]int{p.Margin: 1000, big: 200} {
		for range runs {
			if simulate(p, rng, shift) == Different {
				called[shift]++
			}
		}
	}
	t.Logf("called different: %v (of 1000 at the margin, 200 at %g)", called, big)
	if rate := float64(called[p.Margin]) / 1000; rate > p.Alpha {
		t.Errorf("a shift at the margin called different at rate %.3f, above alpha %g", rate, p.Alpha)
	}
	if called[big] < 160 {
		t.Errorf("a shift of %g sd called different in %d of 200", big, called[big])
	}
}

// TestShiftInsideMarginIsNoChange: a real shift of 0.11% (an interval
// far from 0 but far inside a 2% margin) is "same", never "different":
// a comparison answers the question asked, a change beyond the margin.
func TestShiftInsideMarginIsNoChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	d := make([]float64, 40)
	for i := range d {
		d[i] = math.Log1p(0.0011) + 0.0003*rng.NormFloat64()
	}
	p := Plan{Looks: []int{10, 20, 40}, Alpha: 0.05, Margin: math.Log1p(0.02), Power: 0.9, Resamples: 100}
	if got := p.Decide(d, true); got.Outcome != Same || got.CI.Low <= 0 {
		t.Errorf("a 0.11%% shift under a 2%% margin: %s, interval %v (want same, the interval above 0)", got.Outcome, got.CI)
	}
}
