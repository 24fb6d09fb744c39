package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 4, 2, 3}, 0.95)
	if s.Median != 3 || s.Min != 1 || s.Max != 5 || s.CILow != 1 || s.CIHigh != 5 || math.Abs(s.CILevel-0.9375) > 1e-9 {
		t.Errorf("5 samples: %+v", s)
	}
	x := make([]float64, 20)
	for i := range x {
		x[i] = float64(i + 1)
	}
	s = Summarize(x, 0.95)
	// n = 20: [x(6), x(15)] covers the median with 95.86%.
	if s.Median != 10.5 || s.CILow != 6 || s.CIHigh != 15 || s.CILevel < 0.95 {
		t.Errorf("20 samples: %+v", s)
	}
}

// TestMannWhitneyExact: the exact p-values of small samples, against
// their known values: five against five, completely separated, give
// 2/252 = 0.0079; identical ranks interleaved give 1.
func TestMannWhitneyExact(t *testing.T) {
	if u, p := MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}); u != 0 || math.Abs(p-2.0/252) > 1e-9 {
		t.Errorf("separated: U %v p %v", u, p)
	}
	if _, p := MannWhitney([]float64{1, 4, 5, 8, 9}, []float64{2, 3, 6, 7, 10}); p < 0.5 {
		t.Errorf("interleaved: p %v", p)
	}
	if _, p := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(p-0.1) > 1e-9 { // 2/20
		t.Errorf("3 against 3: p %v, want 0.1 (never significant at 5%%)", p)
	}
}

// TestMannWhitneyDecides: synthetic results files' worth: a 5% shift in
// noisy measurements (sd 1%) is significant in 10 against 10; two draws
// of one distribution are not, in at least 90 of 100 tries.
func TestMannWhitneyDecides(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int, mean float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = mean * (1 + 0.01*rng.NormFloat64())
		}
		return x
	}
	if _, p := MannWhitney(draw(10, 300000), draw(10, 315000)); p >= 0.05 {
		t.Errorf("a 5%% shift: p %v", p)
	}
	same := 0
	for range 100 {
		if _, p := MannWhitney(draw(10, 300000), draw(10, 300000)); p >= 0.05 {
			same++
		}
	}
	if same < 90 {
		t.Errorf("one distribution: not significant in %d of 100, want 90 or more", same)
	}
	// With ties (the normal approximation).
	if _, p := MannWhitney([]float64{1, 1, 2, 2, 3, 3, 4, 4}, []float64{5, 5, 6, 6, 7, 7, 8, 8}); p >= 0.01 {
		t.Errorf("separated with ties: p %v", p)
	}
}
