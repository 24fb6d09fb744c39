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
//   - the router's relative cost (the default figure) and cost per
//     packet in repeated runs of 20 one-second trials each, against
//     their median;
//   - positive controls (bench --check-sensitivity): 8 rules added to
//     the lab as deployed, in the default set-up (a duet at 100 kpps,
//     the relative cost), at full load (sequential pairs, the rate), and
//     in a set-up that cannot see it (the rate at 100 kpps, which the
//     router holds): seen, seen, and "cannot see it";
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
	flag.IntVar(&c.repeats, "repeats", 5, "repeats of the router's relative cost and cost per packet (20 one-second trials each)")
	flag.StringVar(&c.steps, "steps", "control,aa,dose,tries,nat,repeats", "the steps to run, in this order")
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
		{"control", "positive controls", func() error { return controls(m, l) }},
		{"aa", "A against A", func() error { return aa(m, l, c.aa) }},
		{"dose", "dose response", func() error { return dose(m, l) }},
		{"tries", "one rule more, and two", func() error { return tries(m, l, c.tries) }},
		{"nat", "NAT against plain", func() error { return nat(c.nat, c.nats) }},
		{"repeats", "repeats of the router's figures", func() error { return repeats(m, l, c.repeats) }},
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

// controls measures a positive control of 8 rules in three set-ups: two
// that can see the routers' cost and one that cannot, saying what each
// found and how long it took.
func controls(m *lab.Manager, l *spec.Lab) error {
	for _, s := range []struct {
		what string
		req  bench.Request
		sel  bench.Selection
		want bool
	}{
		{"duet at 100 kpps, the default figure", bench.Request{Duet: true}, bench.Selection{}, true},
		{"full load, sequential pairs, the rate", bench.Request{Duet: true, DuetAuto: true}, bench.Selection{Rate: "max"}, true},
		{"100 kpps, the rate (held: it cannot move)", bench.Request{Duet: true, Figure: "pps"}, bench.Selection{}, false},
	} {
		start := time.Now()
		s.req.CheckSensitivity, s.req.ControlRules = true, 8
		out, err := benchrun.Sweep(m, l, s.req, s.sel)
		if err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
		c := out.Control
		verdict := "as expected"
		if c.Seen != s.want {
			verdict = "NOT as expected"
		}
		fmt.Printf("  %-42s seen %-5v (%s), size as expected %v, %3.0f s: %s\n", s.what, c.Seen, verdict, c.SizeAsExpected, time.Since(start).Seconds(), c.Sentence)
	}
	return nil
}

// line prints one comparison's decision (on d.Figure), and the spread
// of one pair in the relative cost and the cost per packet when given.
func line(what string, d *report.Decision, took time.Duration, spreads ...[2]float64) {
	fmt.Printf("  %-28s %-13s %+6.2f%% [%+6.2f%%, %+6.2f%%]  %2d pairs, one pair spreads %.2f%%, MDE %.2f%%, %3.0f s",
		what, d.Outcome, d.Estimate, d.CILow, d.CIHigh, d.Pairs, d.PairSD, d.MDE, took.Seconds())
	for _, s := range spreads {
		fmt.Printf(" (a pair spreads %.2f%% relative, %.2f%% in ns)", s[0], s[1])
	}
	fmt.Println()
}

// aa compares the lab as deployed with variant same, which changes
// nothing: once as a duet and once in sequential pairs, then n times as
// a duet. Each comparison also says how far one pair spreads in the
// relative cost and in the cost per packet, measured in the same trials:
// the measurement that chose the default figure.
func aa(m *lab.Manager, l *spec.Lab, n int) error {
	fmt.Println("the lab as deployed (base) against variant same, which changes nothing; 1 s trials at 100 kpps:")
	for _, duet := range []bool{true, false} {
		d, spreads, took, err := aaOnce(m, l, duet)
		if err != nil {
			return err
		}
		line(map[bool]string{true: "duet", false: "sequential pairs"}[duet], d, took, spreads)
	}
	called, maxTook := 0, time.Duration(0)
	var mdes, rel, abs []float64
	for i := range n {
		d, spreads, took, err := aaOnce(m, l, true)
		if err != nil {
			return err
		}
		line(fmt.Sprintf("duet %d/%d", i+1, n), d, took, spreads)
		if d.Outcome == stats.Different {
			called++
		}
		maxTook = max(maxTook, took)
		mdes, rel, abs = append(mdes, d.MDE), append(rel, spreads[0]), append(abs, spreads[1])
	}
	fmt.Printf("%d of %d comparisons of a variant with itself called a change (at most 1 wanted); MDE median %.2f%%, largest %.2f%%; the longest took %.0f s\n",
		called, n, stats.Median(mdes), slicesMax(mdes), maxTook.Seconds())
	fmt.Printf("one pair spreads (median of the %d duets): %.2f%% in the relative cost, %.2f%% in the cost per packet (ns), measured in the same trials\n",
		n, stats.Median(rel), stats.Median(abs))
	return nil
}

// aaOnce is one comparison of base with same: its decision, the spread
// of one pair in the relative cost and in the cost per packet, and its
// time.
func aaOnce(m *lab.Manager, l *spec.Lab, duet bool) (*report.Decision, [2]float64, time.Duration, error) {
	var spreads [2]float64
	f, err := os.CreateTemp("", "nslab-bench-compare-*.jsonl")
	if err != nil {
		return nil, spreads, 0, err
	}
	defer func() { _ = os.Remove(f.Name()) }() // a temporary file: best effort
	defer f.Close()
	cs, took, err := compare(m, l, []string{spec.BaseVariant, "same"}, duet, f)
	if err != nil {
		return nil, spreads, 0, err
	}
	for i, fig := range []string{"router_relative_cost", "router_ns_per_packet"} {
		if spreads[i], err = pairSpread(f.Name(), fig, spec.BaseVariant, "same"); err != nil {
			return nil, spreads, 0, err
		}
	}
	return cs[0].Decision, spreads, took, nil
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
	pairs, base, err := pairsOf(f.Name(), cs[0].Decision.Figure)
	if err != nil {
		return err
	}
	fit := fitDose(pairs, base)
	fmt.Printf("cost per packet against the rule count (%d pairs, each rule count against 1 rule at the same time, their ratio of %s; in ns by 1 rule's median cost): %.0f ns + %.1f ns a rule (95%% interval %.1f .. %.1f ns, ±%.0f%% of itself); R² of the line through the five medians %.4f\n",
		len(pairs), cs[0].Decision.Figure, fit.intercept, fit.slope, fit.low, fit.high, 100*(fit.high-fit.slope)/fit.slope, fit.r2)
	return nil
}

// pair is one block's ratio of a rule count's cost to 1 rule's.
type pair struct {
	rules int
	ratio float64
}

// pairsOf reads a results file of the dose run: every block's ratio of
// the figure the comparisons decide on (figure), and the median cost per
// packet of 1 rule in ns.
func pairsOf(path, figure string) ([]pair, float64, error) {
	byBlock, err := blocksOf(path, figure)
	if err != nil {
		return nil, 0, err
	}
	ns, err := blocksOf(path, "router_ns_per_packet")
	if err != nil {
		return nil, 0, err
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
	var ones []float64
	for _, b := range ns {
		if v, ok := b["rules1"]; ok {
			ones = append(ones, v)
		}
	}
	return out, stats.Median(ones), nil
}

// blocksOf reads a results file: figure's value by block, then variant.
func blocksOf(path, figure string) (map[string]map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byBlock := map[string]map[string]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<26)
	for sc.Scan() {
		rf := report.NewResultsFile("", true)
		if err := rf.AddLine(sc.Bytes()); err != nil {
			return nil, err
		}
		for k, v := range rf.Figures {
			if k.Figure != figure {
				continue
			}
			block := rf.Blocks[k][0]
			if byBlock[block] == nil {
				byBlock[block] = map[string]float64{}
			}
			byBlock[block][variantOf(sc.Text())] = v[0]
		}
	}
	return byBlock, sc.Err()
}

// pairSpread is the standard deviation, in %, of the log ratio of
// variant b's figure to a's over the blocks of a results file that
// measured both.
func pairSpread(path, figure, a, b string) (float64, error) {
	byBlock, err := blocksOf(path, figure)
	if err != nil {
		return 0, err
	}
	var logs []float64
	for _, vs := range byBlock {
		x, okA := vs[a]
		y, okB := vs[b]
		if okA && okB && x > 0 && y > 0 {
			logs = append(logs, math.Log(y/x))
		}
	}
	if len(logs) < 2 {
		return math.NaN(), nil
	}
	var mean, ss float64
	for _, l := range logs {
		mean += l / float64(len(logs))
	}
	for _, l := range logs {
		ss += (l - mean) * (l - mean)
	}
	return 100 * math.Sqrt(ss/float64(len(logs)-1)), nil
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

// repeats measures the router's figures n times, 20 one-second trials
// each, against the median of the n: the relative cost (the default
// figure of --variants) and the cost per packet in ns.
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
				if r.Cost.RelativeCost > 0 {
					rel = append(rel, r.Cost.RelativeCost)
				}
			}
		}
		meds = append(meds, stats.Median(costs))
		rmeds = append(rmeds, stats.Median(rel))
		fmt.Printf("  repeat %d: relative cost median %.3f over %d trials (%.3f..%.3f); %.0f ns a packet (%.0f..%.0f); %.0f s\n",
			i+1, rmeds[i], len(rel), slicesMin(rel), slicesMax(rel), meds[i], slicesMin(costs), slicesMax(costs), time.Since(start).Seconds())
	}
	med, rmed := stats.Median(meds), stats.Median(rmeds)
	fmt.Printf("the router's relative cost (the default figure) over %d repeats: median %.3f, each within ±%.2f%% of it (±3%% wanted)\n", n, rmed, 100*worstFrom(rmeds, rmed))
	fmt.Printf("the router's cost per packet in ns, the same trials: median %.0f ns, each within ±%.2f%% of it\n", med, 100*worstFrom(meds, med))
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
