// Package stats is the statistics nslab gives with repeated measurements:
// the median with its range, a distribution-free confidence interval of
// the median, and the Mann-Whitney U test of whether two sets of
// measurements differ (as Go's benchstat decides whether a benchmark
// changed). Pure functions over float64 samples.
package stats

import (
	"math"
	"sort"
)

// Summary is a sample's median, range and a confidence interval of the
// median.
type Summary struct {
	N        int     `json:"n"`
	Median   float64 `json:"median"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	CILow    float64 `json:"ci_low"`
	CIHigh   float64 `json:"ci_high"`
	CILevel  float64 `json:"ci_level"` // the interval's coverage (0.9375 for 5 samples, say)
	CIMethod string  `json:"ci_method"`
}

// ciMethod names how Summarize's interval is made.
const ciMethod = "order statistics of the median (distribution-free, binomial)"

// Summarize summarises x: the median, min..max, and the narrowest
// interval between order statistics x(k) and x(n+1-k) that covers the
// median with probability at least level (or the whole range, with its
// coverage, when even that is less, as for fewer than 6 samples at 95%).
func Summarize(x []float64, level float64) Summary {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	n := len(s)
	out := Summary{N: n, CIMethod: ciMethod}
	if n == 0 {
		return out
	}
	out.Min, out.Max, out.Median = s[0], s[n-1], median(s)
	// P(x(k) <= median <= x(n+1-k)) = 1 - 2 P(Bin(n, 1/2) < k).
	k, cover := 1, coverage(n, 1)
	for k+1 <= n/2 && coverage(n, k+1) >= level {
		k++
		cover = coverage(n, k)
	}
	out.CILow, out.CIHigh, out.CILevel = s[k-1], s[n-k], cover
	return out
}

// coverage is the probability that [x(k), x(n+1-k)] covers the median.
func coverage(n, k int) float64 {
	below := 0.0
	for i := 0; i < k; i++ {
		below += binom(n, i) / math.Pow(2, float64(n))
	}
	return 1 - 2*below
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// Median is the median of x (0 for none); x is not changed.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return median(s)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// MannWhitney is the two-sided Mann-Whitney U test of samples a and b:
// the probability of a difference in ranks at least as large as theirs
// when both come from one distribution. Exact (by counting rank sums)
// for samples of up to 50 without ties; otherwise the normal
// approximation with the tie correction. A p-value below 0.05 is what
// benchstat calls significant.
func MannWhitney(a, b []float64) (u, p float64) {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	ranks, ties := rank(a, b)
	var r1 float64
	for i := range a {
		r1 += ranks[i]
	}
	u1 := r1 - float64(n1*(n1+1))/2
	u = math.Min(u1, float64(n1*n2)-u1)
	if !ties && n1+n2 <= 50 {
		return u, math.Min(1, 2*exactCDF(n1, n2, u))
	}
	mean := float64(n1*n2) / 2
	n := float64(n1 + n2)
	tieTerm := tieSum(a, b)
	sd := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	if sd == 0 {
		return u, 1
	}
	z := (u - mean + 0.5) / sd // continuity correction, u <= mean
	return u, math.Min(1, 2*normalCDF(z))
}

// rank gives the ranks of a then b in their union (ties get the mean
// rank) and whether there were ties.
func rank(a, b []float64) ([]float64, bool) {
	type v struct {
		x float64
		i int
	}
	all := make([]v, 0, len(a)+len(b))
	for i, x := range append(append([]float64(nil), a...), b...) {
		all = append(all, v{x, i})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].x < all[j].x })
	ranks := make([]float64, len(all))
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].x == all[i].x {
			j++
		}
		if j-i > 1 {
			ties = true
		}
		for k := i; k < j; k++ {
			ranks[all[k].i] = float64(i+j+1) / 2
		}
		i = j
	}
	return ranks, ties
}

// tieSum is the sum of t^3 - t over groups of t tied values.
func tieSum(a, b []float64) float64 {
	count := map[float64]int{}
	for _, x := range append(append([]float64(nil), a...), b...) {
		count[x]++
	}
	s := 0.0
	for _, t := range count {
		s += float64(t*t*t - t)
	}
	return s
}

// exactCDF is P(U <= u) for samples of n1 and n2 without ties: the
// number of arrangements with at most u inversions, over all of them.
func exactCDF(n1, n2 int, u float64) float64 {
	// ways[i][j][k]: arrangements of i and j items with U = k.
	maxU := n1 * n2
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // i = 0
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		for j := 0; j <= n2; j++ {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= maxU; k++ {
				// The largest item is from the first sample (it adds j to U)
				// or from the second (it adds nothing).
				if k-j >= 0 {
					cur[j][k] += prev[j][k-j]
				}
				if j > 0 {
					cur[j][k] += cur[j-1][k]
				}
			}
		}
		prev = cur
	}
	total, le := 0.0, 0.0
	for k, w := range prev[n2] {
		total += w
		if float64(k) <= u {
			le += w
		}
	}
	return le / total
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
