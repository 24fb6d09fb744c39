// Command nslab-bench-forwarding measures, on this machine, how well the
// forwarding benchmark lab's (examples/forwarding-benchmark.yaml, placed:
// the sender on one CPU, the router's receive work on another) no-drop
// and partial-drop rates reproduce (make bench-forwarding):
//   - MLRsearch (bench --search: NDR and PDR) several times, and the older
//     binary search (--search-binary) in the same run, rounds alternating,
//     each figure's median, range and largest deviation from the median;
//   - the PDR found rerun: three plain runs of the final trial duration at
//     its lower bound (each should lose at most 0.5%), and three 10% above
//     its upper bound (at least two should lose more).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/nslab/nslab/cmd/internal/benchrun"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/bench/search"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

func main() {
	file := flag.String("lab", "examples/forwarding-benchmark.yaml", "the lab (its first traffic run is measured)")
	rounds := flag.Int("rounds", 5, "MLRsearch runs")
	binary := flag.Int("binary", 3, "binary searches, alternating with the first MLRsearch runs")
	flag.Parse()
	benchrun.Main("bench-forwarding", *file, "f", func(m *lab.Manager, l *spec.Lab) int { return run(m, l, *rounds, *binary) })
}

// run measures; the lab is deployed by the first search and kept.
func run(m *lab.Manager, l *spec.Lab, rounds, binary int) int {
	var ndr, pdr, old []float64
	var last *report.MLRResult
	fmt.Printf("the placed forwarding lab, 64-byte frames; MLRsearch %s, goals NDR and PDR (exceed 50%%, final 1 s, sum 7 s, width 2%%); binary search with 2 s trials confirmed 3 times:\n", search.Draft)
	for r := range max(rounds, binary) {
		if r < rounds {
			out, err := benchrun.Sweep(m, l, bench.Request{MLR: &search.MLROptions{}}, bench.Selection{})
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench-forwarding:", err)
				return 1
			}
			last = out.MLR[0]
			g := map[string]report.GoalOutcome{}
			for _, x := range last.Goals {
				g[x.Name] = x
			}
			ndr, pdr = append(ndr, g["NDR"].ConditionalThroughputPPS), append(pdr, g["PDR"].ConditionalThroughputPPS)
			fmt.Printf("  round %d, MLRsearch: NDR %8.0f pps (bounds %.0f..%.0f), PDR %8.0f pps (bounds %.0f..%.0f); %d trials in %.0f s\n", r+1,
				g["NDR"].ConditionalThroughputPPS, g["NDR"].LowerBoundPPS, g["NDR"].UpperBoundPPS,
				g["PDR"].ConditionalThroughputPPS, g["PDR"].LowerBoundPPS, g["PDR"].UpperBoundPPS, len(last.Trials), last.Duration.Seconds())
		}
		if r < binary {
			out, err := benchrun.Sweep(m, l, bench.Request{Search: &search.Options{Trial: 2 * time.Second, Confirm: 3}}, bench.Selection{})
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench-forwarding:", err)
				return 1
			}
			s := out.Searches[0]
			old = append(old, s.ThroughputPPS)
			fmt.Printf("  round %d, binary search: no-drop %8.0f pps (%d trials)\n", r+1, s.ThroughputPPS, len(s.Trials))
		}
	}
	fmt.Printf("\nmedian (min..max), and the largest deviation from the median:\n")
	printSpread("MLRsearch PDR (conditional throughput)", pdr)
	printSpread("MLRsearch NDR (conditional throughput)", ndr)
	printSpread("binary search no-drop rate (the old --search)", old)
	return recheck(m, l, last)
}

// recheck reruns the last search's PDR bounds as plain runs of the final
// trial duration.
func recheck(m *lab.Manager, l *spec.Lab, s *report.MLRResult) int {
	var g report.GoalOutcome
	for _, x := range s.Goals {
		if x.Name == "PDR" {
			g = x
		}
	}
	if g.UpperBoundPPS == 0 {
		fmt.Printf("\nPDR: the top rate passed (sender-limited): nothing to rerun above it\n")
		return 0
	}
	fmt.Printf("\nthe last search's PDR, rerun as plain runs of %gs:\n", g.FinalTrialS)
	held, over := 0, 0
	for i, load := range []float64{g.LowerBoundPPS, g.LowerBoundPPS, g.LowerBoundPPS, g.UpperBoundPPS * 1.1, g.UpperBoundPPS * 1.1, g.UpperBoundPPS * 1.1} {
		reps, err := benchrun.Sweep(m, l, bench.Request{}, bench.Selection{Rate: fmt.Sprintf("%.0fpps", load), Duration: time.Duration(g.FinalTrialS * float64(time.Second))})
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-forwarding:", err)
			return 1
		}
		r := reps.Reports[0]
		where := "at its lower bound"
		if i >= 3 {
			where = "10% above its upper bound"
		}
		lossPct := 100 * r.LossAgainst(load) // what was not sent of the load counts as lost
		fmt.Printf("  %8.0f pps (%s): sent %d (%.0f pps), received %d, lost %.3f%% of the load\n", load, where, r.Sent, r.SentPPS(), r.Received, lossPct)
		if i < 3 && lossPct <= 0.5 {
			held++
		}
		if i >= 3 && lossPct > 0.5 {
			over++
		}
	}
	fmt.Printf("at its lower bound %d of 3 runs lost at most 0.5%%; 10%% above its upper bound %d of 3 lost more\n", held, over)
	return 0
}

// printSpread prints a figure's median, range and largest deviation from the
// median.
func printSpread(what string, v []float64) {
	if len(v) == 0 {
		return
	}
	st := stats.Summarize(v, report.SummaryLevel)
	dev := math.Max(st.Max/st.Median-1, 1-st.Min/st.Median)
	fmt.Printf("  %-48s %9.0f pps  (%.0f..%.0f)  largest deviation %.1f%% over %d\n", what, st.Median, st.Min, st.Max, 100*dev, st.N)
}
