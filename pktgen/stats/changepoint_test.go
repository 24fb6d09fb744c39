package stats

import (
	"math/rand/v2"
	"testing"
)

// TestSegmentsFindsAStep: a series with a 5% step after 12 runs of 1%
// noise splits there; the same series without the step stays one run.
func TestSegmentsFindsAStep(t *testing.T) {
	for seed := range uint64(30) {
		segmentsOf(t, seed)
	}
}

func segmentsOf(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var flat, step []float64
	for i := range 24 {
		v := 100 * (1 + 0.01*rng.NormFloat64())
		flat = append(flat, v)
		if i >= 12 {
			v *= 1.05
		}
		step = append(step, v)
	}
	if s := Segments(flat, 0.001); len(s) != 1 {
		t.Errorf("seed %d: flat: %+v", seed, s)
	}
	s := Segments(step, 0.001)
	if len(s) != 2 || s[1].Start != 12 || s[1].Mean < 1.03*s[0].Mean {
		t.Errorf("seed %d: step at 12: %+v", seed, s)
	}
	if s := Segments([]float64{5, 5, 5, 5}, 0.001); len(s) != 1 {
		t.Errorf("constant: %+v", s)
	}
}

// TestShift: the estimate of a 2% shift of log values with 1% noise lies
// near it, and its interval covers it and excludes 0 with 50 trials a
// side; with none, the interval covers 0.
func TestShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var a, b, c []float64
	for range 50 {
		a = append(a, 0.01*rng.NormFloat64())
		b = append(b, 0.02+0.01*rng.NormFloat64())
		c = append(c, 0.01*rng.NormFloat64())
	}
	est, iv := Shift(a, b, 0.95)
	if est < 0.015 || est > 0.025 || iv.Low > 0.02 || iv.High < 0.02 || iv.Low <= 0 {
		t.Errorf("2%% shift: %v %+v", est, iv)
	}
	if _, iv := Shift(a, c, 0.95); iv.Low > 0 || iv.High < 0 {
		t.Errorf("no shift: %+v", iv)
	}
	if mde := ShiftMDE(0.01, 50, 50, 0.05, 0.9); mde < 0.006 || mde > 0.007 {
		t.Errorf("MDE %v", mde)
	}
}
