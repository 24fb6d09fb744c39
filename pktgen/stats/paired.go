package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Paired measurements: A and B measured back to back, many times, and
// the change of B against A taken from each pair alone, so that what the
// machine did between pairs (its drift over minutes) cancels. The
// statistics are over per-pair differences d (nslab uses log ratios):
// the Wilcoxon signed-rank test, the Hodges-Lehmann estimate and its
// exact interval, as R's wilcox.test(d, conf.int = TRUE) gives them.

// SignedRank is the two-sided Wilcoxon signed-rank test of differences
// d against 0: V, the sum of the ranks of the positive differences, and
// its p-value. Zeros are dropped (Wilcoxon's way, as R does). Exact for
// up to 50 differences without ties; otherwise the normal approximation
// with the tie and continuity corrections.
func SignedRank(d []float64) (v, p float64) {
	nz := make([]float64, 0, len(d))
	for _, x := range d {
		if x != 0 {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return 0, 1
	}
	abs := make([]float64, n)
	for i, x := range nz {
		abs[i] = math.Abs(x)
	}
	ranks, ties := rank(abs, nil)
	for i, x := range nz {
		if x > 0 {
			v += ranks[i]
		}
	}
	if !ties && n <= 50 {
		dist := signedRankDist(n)
		lo := math.Min(v, float64(n*(n+1))/2-v)
		return v, math.Min(1, 2*dist.cdf(int(lo)))
	}
	mean := float64(n*(n+1)) / 4
	sd := math.Sqrt(float64(n*(n+1)*(2*n+1))/24 - tieSum(abs, nil)/48)
	if sd == 0 {
		return v, 1
	}
	z := v - mean
	z = (math.Abs(z) - 0.5) / sd
	return v, math.Min(1, 2*normalCDF(-math.Max(z, 0)))
}

// signedRank is the null distribution of V for n differences: count[k]
// is the number of the 2^n sign patterns whose positive ranks sum to k.
type signedRank struct {
	count []float64
	total float64
}

func signedRankDist(n int) signedRank {
	maxV := n * (n + 1) / 2
	c := make([]float64, maxV+1)
	c[0] = 1
	for r := 1; r <= n; r++ {
		for k := maxV; k >= r; k-- {
			c[k] += c[k-r]
		}
	}
	return signedRank{count: c, total: math.Pow(2, float64(n))}
}

// cdf is P(V <= k).
func (s signedRank) cdf(k int) float64 {
	if k < 0 {
		return 0
	}
	sum := 0.0
	for i := 0; i <= k && i < len(s.count); i++ {
		sum += s.count[i]
	}
	return sum / s.total
}

// quantile is R's qsignrank(p, n): the smallest k with P(V <= k) >= p.
func (s signedRank) quantile(p float64) int {
	sum := 0.0
	for k, c := range s.count {
		sum += c
		if sum/s.total >= p*(1-64*epsilon) {
			return k
		}
	}
	return len(s.count) - 1
}

// walsh is the sorted Walsh averages (d[i]+d[j])/2, i <= j.
func walsh(d []float64) []float64 {
	w := make([]float64, 0, len(d)*(len(d)+1)/2)
	for i := range d {
		for j := i; j < len(d); j++ {
			w = append(w, (d[i]+d[j])/2)
		}
	}
	sort.Float64s(w)
	return w
}

// HodgesLehmann is the Hodges-Lehmann estimate of the centre of d: the
// median of its Walsh averages (R's "(pseudo)median").
func HodgesLehmann(d []float64) float64 {
	if len(d) == 0 {
		return 0
	}
	return median(walsh(d))
}

// Interval is a confidence interval and the coverage it has (an exact
// interval's coverage is at least the level asked for).
type Interval struct {
	Low, High, Level float64
}

// SignedRankCI is the confidence interval of the centre of d that
// inverts the signed-rank test at level (0.95 for 95%): exact, between
// order statistics of the Walsh averages, for up to 50 differences
// without ties (R's wilcox.test conf.int, exact = TRUE); otherwise from
// the normal approximation of V's quantile.
func SignedRankCI(d []float64, level float64) Interval {
	n := len(d)
	if n == 0 {
		return Interval{}
	}
	w := walsh(d)
	m := len(w)
	alpha := 1 - level
	abs := make([]float64, n)
	for i, x := range d {
		abs[i] = math.Abs(x)
	}
	_, ties := rank(abs, nil)
	var qu int
	var achieved float64
	if !ties && n <= 50 {
		dist := signedRankDist(n)
		qu = dist.quantile(alpha / 2)
		if qu == 0 {
			qu = 1
		}
		achieved = 1 - 2*dist.cdf(qu-1)
	} else {
		sd := math.Sqrt(float64(n*(n+1)*(2*n+1)) / 24)
		qu = int(math.Floor(float64(m)/2 - NormalQuantile(1-alpha/2)*sd))
		qu = max(qu, 1)
		achieved = level
	}
	ql := m - qu
	return Interval{Low: w[qu-1], High: w[ql], Level: achieved}
}

// BootstrapMedianCI is the percentile bootstrap interval of d's median
// at level, from n resamples (0: 10000) with a fixed seed (the same data
// give the same interval): a cross-check of SignedRankCI that assumes no
// symmetry.
func BootstrapMedianCI(d []float64, level float64, n int) Interval {
	if len(d) == 0 {
		return Interval{}
	}
	rng := rand.New(rand.NewPCG(2, 2))
	if n <= 0 {
		n = 10000
	}
	meds := make([]float64, n)
	s := make([]float64, len(d))
	for i := range meds {
		for j := range s {
			s[j] = d[rng.IntN(len(d))]
		}
		meds[i] = Median(s)
	}
	sort.Float64s(meds)
	a := (1 - level) / 2
	return Interval{Low: meds[int(a*float64(n))], High: meds[min(n-1, int((1-a)*float64(n)))], Level: level}
}

// RobustSD is the median absolute deviation of x, scaled to estimate a
// normal distribution's standard deviation (1.4826 MAD).
func RobustSD(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	m := Median(x)
	dev := make([]float64, len(x))
	for i, v := range x {
		dev[i] = math.Abs(v - m)
	}
	return 1.4826 * Median(dev)
}

// SD is the sample standard deviation of x.
func SD(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

// epsilon is the float64 machine epsilon (R's fuzz in its quantiles).
const epsilon = 2.220446049250313e-16

// signedRankARE is the signed-rank test's efficiency against the t test
// on normal data (3/pi): it needs 1/0.955 as many pairs for the same
// power.
const signedRankARE = 3 / math.Pi

// MDE is the smallest shift of the centre of paired differences whose
// spread is sd that n pairs detect with the given power, in a two-sided
// test at level alpha: (z(1-alpha/2) + z(power)) sd / sqrt(n ARE).
func MDE(sd float64, n int, alpha, power float64) float64 {
	if n == 0 {
		return math.Inf(1)
	}
	return (NormalQuantile(1-alpha/2) + NormalQuantile(power)) * sd / math.Sqrt(float64(n)*signedRankARE)
}

// PairsFor is how many pairs detect a shift of effect with the given
// power at level alpha, when the differences' spread is sd: MDE solved
// for n.
func PairsFor(sd, effect, alpha, power float64) int {
	if effect <= 0 {
		return math.MaxInt32
	}
	z := (NormalQuantile(1-alpha/2) + NormalQuantile(power)) * sd / effect
	return int(math.Ceil(z * z / signedRankARE))
}

// NormalQuantile is the standard normal distribution's quantile function:
// math.Erfcinv, polished by two Newton steps on the distribution function.
func NormalQuantile(p float64) float64 {
	if p <= 0 {
		return math.Inf(-1)
	}
	if p >= 1 {
		return math.Inf(1)
	}
	x := -math.Sqrt2 * math.Erfcinv(2*p)
	for range 2 {
		e := normalCDF(x) - p
		x -= e * math.Sqrt(2*math.Pi) * math.Exp(x*x/2)
	}
	return x
}
