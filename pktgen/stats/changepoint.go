package stats

import "math"

// Segment is a run of consecutive values with one mean.
type Segment struct {
	Start, End int // [Start, End)
	Mean, SD   float64
}

// Segments splits a series into runs of one level each, as FD.io CSIT's
// jumpavg does for its trend analysis (csit/resources/libraries/python/
// jumpavg: the grouping that needs the fewest bits to describe the
// series wins). Here the series is taken as a level per run plus noise
// of one spread throughout, estimated robustly from the differences of
// neighbours (a step moves one difference, not the spread); a run costs
// its squared deviations over twice the noise's variance plus a penalty
// of 2 ln n (a Bayesian information criterion made conservative, so that
// noise alone does not split), and the partition of least total cost is
// found exactly by dynamic programming (optimal partitioning, Jackson et
// al. 2005), O(n^2). minRel is the smallest spread the noise is granted,
// relative to the series' median (identical values would otherwise make
// any split free).
func Segments(x []float64, minRel float64) []Segment {
	n := len(x)
	if n == 0 {
		return nil
	}
	pre, pre2 := make([]float64, n+1), make([]float64, n+1)
	for i, v := range x {
		pre[i+1], pre2[i+1] = pre[i]+v, pre2[i]+v*v
	}
	sigma := math.Max(noise(x), minRel*math.Abs(Median(x)))
	if sigma == 0 {
		sigma = 1e-12
	}
	penalty := 2 * math.Log(float64(n))
	sse := func(i, j int) (float64, float64) {
		m := float64(j - i)
		mean := (pre[j] - pre[i]) / m
		return math.Max(pre2[j]-pre2[i]-m*mean*mean, 0), mean
	}
	best, from := make([]float64, n+1), make([]int, n+1)
	for j := 1; j <= n; j++ {
		best[j] = math.Inf(1)
		for i := 0; i < j; i++ {
			e, _ := sse(i, j)
			if c := best[i] + e/(2*sigma*sigma) + penalty; c < best[j] {
				best[j], from[j] = c, i
			}
		}
	}
	var out []Segment
	for j := n; j > 0; j = from[j] {
		e, mean := sse(from[j], j)
		out = append([]Segment{{Start: from[j], End: j, Mean: mean, SD: math.Sqrt(e / float64(j-from[j]))}}, out...)
	}
	return out
}

// noise is the spread of a series' noise from its neighbours'
// differences: their robust spread over sqrt 2.
func noise(x []float64) float64 {
	if len(x) < 3 {
		return 0
	}
	d := make([]float64, len(x)-1)
	for i := range d {
		d[i] = x[i+1] - x[i]
	}
	return RobustSD(d) / math.Sqrt2
}
