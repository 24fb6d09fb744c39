// Command nslab-bench-compare measures, on this machine, how well nslab
// answers "is B faster than A" (make bench-compare), with the known
// changes of examples/rule-cost.yaml (firewall rules that match nothing)
// and NAT (examples/nat-router.yaml):
//   - A against A: one comparison's spread and minimum detectable effect,
//     in a duet and in sequential pairs (which is more sensitive), then
//     more comparisons of a variant with itself, counting the changes
//     they call;
//   - the dose response: 1, 2, 4, 8 and 16 rules, each against 1 in one
//     duet run; a line fitted to the cost per packet against the rule
//     count (R²), and the cost of one rule with its 95% interval;
//   - 1 against 2 rules and 2 against 4, several times each, counting
//     the changes called with the right sign;
//   - NAT against plain forwarding, several times;
//   - the router's cost per packet in repeated runs of 20 one-second
//     trials each, against their median;
//   - the time each took.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/cmd/internal/benchrun"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

type config struct {
	nat                      string
	aa, tries, nats, repeats int
	steps                    string
}

func main() {
	var c config
	file := flag.String("lab", "examples/rule-cost.yaml", "the lab with variants rules0, same and rules1..rules16")
	flag.StringVar(&c.nat, "nat", "examples/nat-router.yaml", "the NAT lab with variants nat and plain")
	flag.IntVar(&c.aa, "aa", 20, "comparisons of a variant with itself")
	flag.IntVar(&c.tries, "tries", 10, "comparisons of 1 against 2 rules, and of 2 against 4")
	flag.IntVar(&c.nats, "nats", 5, "comparisons of NAT against plain forwarding")
	flag.IntVar(&c.repeats, "repeats", 5, "repeats of the router's cost per packet (20 one-second trials each)")
	flag.StringVar(&c.steps, "steps", "aa,dose,tries,nat,repeats", "the steps to run, in this order")
	flag.Parse()
	benchrun.Main("bench-compare", *file, "c", func(m *lab.Manager, l *spec.Lab) int { return run(m, l, c) })
}

// run measures, step by step; the lab is deployed by the first
// comparison and kept.
func run(m *lab.Manager, l *spec.Lab, c config) int {
	t0 := time.Now()
	steps := []struct {
		key, name string
		fn        func() error
	}{
		{"aa", "A against A", func() error { return aa(m, l, c.aa) }},
		{"dose", "dose response", func() error { return dose(m, l) }},
		{"tries", "one rule more, and two", func() error { return tries(m, l, c.tries) }},
		{"nat", "NAT against plain", func() error { return nat(c.nat, c.nats) }},
		{"repeats", "repeats of the cost per packet", func() error { return repeats(m, l, c.repeats) }},
	}
	chosen := strings.Split(c.steps, ",")
	for _, s := range steps {
		if !slices.Contains(chosen, s.key) {
			continue
		}
		start := time.Now()
		fmt.Printf("\n## %s\n", s.name)
		if err := s.fn(); err != nil {
			fmt.Fprintf(os.Stderr, "bench-compare: %s: %v\n", s.name, err)
			return 1
		}
		fmt.Printf("(%s took %.0f s)\n", s.name, time.Since(start).Seconds())
	}
	fmt.Printf("\nall of it took %.1f min\n", time.Since(t0).Minutes())
	return 0
}

// compare runs bench --variants on l's first traffic run and returns the
// comparisons and the time it took.
func compare(m *lab.Manager, l *spec.Lab, variants []string, duet bool, results bench.Results) ([]*report.Comparison, time.Duration, error) {
	start := time.Now()
	out, err := benchrun.Sweep(m, l, bench.Request{Variants: variants, Duet: duet, Results: results}, bench.Selection{})
	if err != nil {
		return nil, 0, err
	}
	return out.Comparisons, time.Since(start), nil
}

// line prints one comparison's decision.
func line(what string, d *report.Decision, took time.Duration) {
	fmt.Printf("  %-28s %-13s %+6.2f%% [%+6.2f%%, %+6.2f%%]  %2d pairs, one pair spreads %.2f%%, MDE %.2f%%, %3.0f s\n",
		what, d.Outcome, d.Estimate, d.CILow, d.CIHigh, d.Pairs, d.PairSD, d.MDE, took.Seconds())
}

// aa compares the lab as deployed with variant same, which changes
// nothing: once as a duet and once in sequential pairs, then n times as
// a duet.
func aa(m *lab.Manager, l *spec.Lab, n int) error {
	fmt.Println("the lab as deployed (base) against variant same, which changes nothing; the router's cost per packet at 100 kpps, 1 s trials:")
	for _, duet := range []bool{true, false} {
		cs, took, err := compare(m, l, []string{spec.BaseVariant, "same"}, duet, nil)
		if err != nil {
			return err
		}
		line(map[bool]string{true: "duet", false: "sequential pairs"}[duet], cs[0].Decision, took)
	}
	called, maxTook := 0, time.Duration(0)
	var mdes []float64
	for i := range n {
		cs, took, err := compare(m, l, []string{spec.BaseVariant, "same"}, true, nil)
		if err != nil {
			return err
		}
		d := cs[0].Decision
		line(fmt.Sprintf("duet %d/%d", i+1, n), d, took)
		if d.Outcome == stats.Different {
			called++
		}
		maxTook = max(maxTook, took)
		mdes = append(mdes, d.MDE)
	}
	fmt.Printf("%d of %d comparisons of a variant with itself called a change (at most 1 wanted); MDE median %.2f%%, largest %.2f%%; the longest took %.0f s\n",
		called, n, stats.Median(mdes), slicesMax(mdes), maxTook.Seconds())
	return nil
}

func slicesMax(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// dose measures 1, 2, 4, 8 and 16 rules, each against 1 in a duet, and
// fits a line to the cost per packet against the rule count.
func dose(m *lab.Manager, l *spec.Lab) error {
	f, err := os.CreateTemp("", "nslab-bench-compare-*.jsonl")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }() // a temporary file: best effort
	defer f.Close()
	variants := []string{"rules1", "rules2", "rules4", "rules8", "rules16"}
	cs, took, err := compare(m, l, variants, true, f)
	if err != nil {
		return err
	}
	for i, c := range cs {
		line(variants[i+1]+" against rules1", c.Decision, took)
	}
	pairs, base, err := pairsOf(f.Name())
	if err != nil {
		return err
	}
	fit := fitDose(pairs, base)
	fmt.Printf("cost per packet against the rule count (%d pairs, each rule count against 1 rule at the same time): %.0f ns + %.1f ns a rule (95%% interval %.1f .. %.1f ns, ±%.0f%% of itself); R² of the line through the five medians %.4f\n",
		len(pairs), fit.intercept, fit.slope, fit.low, fit.high, 100*(fit.high-fit.slope)/fit.slope, fit.r2)
	return nil
}

// pair is one block's ratio of a rule count's cost to 1 rule's.
type pair struct {
	rules int
	ratio float64
}

// pairsOf reads a results file of the dose run: every block's ratio,
// and the median cost of 1 rule.
func pairsOf(path string) ([]pair, float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	byBlock := map[string]map[string]float64{}
	var ones []float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<26)
	for sc.Scan() {
		rf := report.NewResultsFile("", true)
		if err := rf.AddLine(sc.Bytes()); err != nil {
			return nil, 0, err
		}
		var variant, block string
		var cost float64
		for k, v := range rf.Figures {
			if k.Figure == "router_ns_per_packet" {
				cost, block = v[0], rf.Blocks[k][0]
			}
		}
		variant = variantOf(sc.Text())
		if byBlock[block] == nil {
			byBlock[block] = map[string]float64{}
		}
		byBlock[block][variant] = cost
		if variant == "rules1" {
			ones = append(ones, cost)
		}
	}
	var out []pair
	for _, b := range byBlock {
		one, ok := b["rules1"]
		for v, cost := range b {
			if v != "rules1" && ok {
				var n int
				if _, err := fmt.Sscanf(v, "rules%d", &n); err != nil {
					return nil, 0, fmt.Errorf("variant %s: not rulesN", v)
				}
				out = append(out, pair{n, cost / one})
			}
		}
	}
	return out, stats.Median(ones), sc.Err()
}

// variantOf is a result line's variant.
func variantOf(line string) string {
	_, after, ok := strings.Cut(line, `"variant":"`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

type doseFit struct{ intercept, slope, low, high, r2 float64 }

// fitDose fits cost(n) = c1 (1 + k (n-1)) to the pairs' ratios (least
// squares through the origin of ratio-1 against n-1), the cost of a rule
// being c1 k with a 95% interval from k's standard error; R² is that of a
// straight line through the median cost of each rule count.
func fitDose(pairs []pair, c1 float64) doseFit {
	var sxy, sxx float64
	for _, p := range pairs {
		x := float64(p.rules - 1)
		sxy += x * (p.ratio - 1)
		sxx += x * x
	}
	k := sxy / sxx
	var ss float64
	for _, p := range pairs {
		r := p.ratio - 1 - k*float64(p.rules-1)
		ss += r * r
	}
	se := math.Sqrt(ss/float64(len(pairs)-1)) / math.Sqrt(sxx)
	z := stats.NormalQuantile(0.975)
	fit := doseFit{slope: c1 * k, low: c1 * (k - z*se), high: c1 * (k + z*se), intercept: c1 * (1 - k)}
	// R²: the medians at 1, 2, 4, 8 and 16 rules.
	med := map[int][]float64{1: {c1}}
	for _, p := range pairs {
		med[p.rules] = append(med[p.rules], c1*p.ratio)
	}
	var xs, ys []float64
	for n, v := range med {
		xs, ys = append(xs, float64(n)), append(ys, stats.Median(v))
	}
	fit.r2 = rSquared(xs, ys)
	return fit
}

// rSquared is the share of ys' variance a least-squares line explains.
func rSquared(xs, ys []float64) float64 {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i]/n, my+ys[i]/n
	}
	var sxy, sxx, syy float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
		syy += (ys[i] - my) * (ys[i] - my)
	}
	return sxy * sxy / (sxx * syy)
}

// tries compares 1 with 2 rules and 2 with 4, n times each.
func tries(m *lab.Manager, l *spec.Lab, n int) error {
	for _, v := range [][]string{{"rules1", "rules2"}, {"rules2", "rules4"}} {
		right, maxTook := 0, time.Duration(0)
		for i := range n {
			cs, took, err := compare(m, l, v, true, nil)
			if err != nil {
				return err
			}
			d := cs[0].Decision
			line(fmt.Sprintf("%s against %s %d/%d", v[1], v[0], i+1, n), d, took)
			if d.Outcome == stats.Different && d.Estimate > 0 {
				right++
			}
			maxTook = max(maxTook, took)
		}
		fmt.Printf("%s against %s: the change called with the right sign (a higher cost) %d of %d times; the longest took %.0f s\n", v[1], v[0], right, n, maxTook.Seconds())
	}
	return nil
}

// nat compares the NAT example's variants nat and plain at 50 kpps, the
// sender pinned to CPU 0 (the example places nothing: the gateway's work
// runs on the sender's CPU, in both twins alike).
func nat(file string, n int) error {
	l, err := benchrun.Lab(file, "n")
	if err != nil {
		return err
	}
	m, done, err := benchrun.Manager("nslab-bench-compare-nat-")
	if err != nil {
		return err
	}
	defer done()
	defer func() {
		if _, err := m.Destroy(l.Name); err != nil {
			fmt.Fprintln(os.Stderr, "bench-compare: destroy the NAT lab:", err)
		}
	}()
	right := 0
	for i := range n {
		start := time.Now()
		out, err := benchrun.Sweep(m, l, bench.Request{Variants: []string{"nat", "plain"}, Duet: true},
			bench.Selection{Rate: "50kpps", CPUs: "0", Duration: time.Second})
		if err != nil {
			return err
		}
		d := out.Comparisons[0].Decision
		line(fmt.Sprintf("plain against nat %d/%d", i+1, n), d, time.Since(start))
		if d.Outcome == stats.Different && d.Faster > 0 {
			right++
		}
	}
	fmt.Printf("plain forwarding found faster than NAT %d of %d times\n", right, n)
	return nil
}

// repeats measures the router's cost per packet n times, 20 one-second
// trials each, against the median of the n.
func repeats(m *lab.Manager, l *spec.Lab, n int) error {
	var meds, rmeds []float64
	for i := range n {
		start := time.Now()
		out, err := benchrun.Sweep(m, l, bench.Request{Repeat: 20}, bench.Selection{})
		if err != nil {
			return err
		}
		var costs, rel []float64
		for _, r := range out.Reports {
			if r.Cost != nil && r.Cost.Packets > 0 {
				costs = append(costs, r.Cost.NsPerPacket)
				if r.Cost.ReceiverNsPerPacket > 0 {
					rel = append(rel, r.Cost.NsPerPacket/r.Cost.ReceiverNsPerPacket)
				}
			}
		}
		meds = append(meds, stats.Median(costs))
		rmeds = append(rmeds, stats.Median(rel))
		fmt.Printf("  repeat %d: median %.0f ns a packet over %d trials (%.0f..%.0f), %.3fx the receiver's, %.0f s\n", i+1, meds[i], len(costs), slicesMin(costs), slicesMax(costs), rmeds[i], time.Since(start).Seconds())
	}
	med, rmed := stats.Median(meds), stats.Median(rmeds)
	fmt.Printf("the router's cost per packet over %d repeats: median %.0f ns, each within ±%.2f%% of it (±3%% wanted)\n", n, med, 100*worstFrom(meds, med))
	fmt.Printf("the router's cost as a multiple of the receiver's, measured in the same trials: median %.3fx, each within ±%.2f%% of it\n", rmed, 100*worstFrom(rmeds, rmed))
	return nil
}

// worstFrom is the largest relative distance of v's values from med.
func worstFrom(v []float64, med float64) float64 {
	worst := 0.0
	for _, x := range v {
		worst = max(worst, math.Abs(x/med-1))
	}
	return worst
}

func slicesMin(x []float64) float64 {
	m := math.Inf(1)
	for _, v := range x {
		m = min(m, v)
	}
	return m
}
