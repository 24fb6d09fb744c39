package stats

import (
	"math"
	"sort"
)

// Shift is the Hodges-Lehmann estimate of the shift from a to b (values
// measured apart, not in pairs): the median of every difference b_j -
// a_i, with the confidence interval that inverts the Mann-Whitney test
// (Bauer 1972): the k-th smallest and largest of those differences, k
// from the test's normal approximation. Where it is the median of n*m
// differences, a difference of medians rests on two values: with trials
// of a spread, it needs fewer of them for the same width.
func Shift(a, b []float64, level float64) (float64, Interval) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return math.NaN(), Interval{math.NaN(), math.NaN(), level}
	}
	d := make([]float64, 0, n*m)
	for _, x := range a {
		for _, y := range b {
			d = append(d, y-x)
		}
	}
	sort.Float64s(d)
	nm := float64(n * m)
	z := NormalQuantile(1 - (1-level)/2)
	k := int(math.Floor(nm/2 - z*math.Sqrt(nm*float64(n+m+1)/12)))
	k = max(k, 0)
	return median(d), Interval{Low: d[k], High: d[len(d)-1-k], Level: level}
}

// ShiftMDE is the smallest shift trials of spread sd (n and m of them)
// detect with the given power in a two-sided test at level alpha, the
// Mann-Whitney test's efficiency (3/pi of the t test's) allowed for.
func ShiftMDE(sd float64, n, m int, alpha, power float64) float64 {
	if n == 0 || m == 0 {
		return math.Inf(1)
	}
	return (NormalQuantile(1-alpha/2) + NormalQuantile(power)) * sd * math.Sqrt(1/float64(n)+1/float64(m)) / math.Sqrt(signedRankARE)
}
