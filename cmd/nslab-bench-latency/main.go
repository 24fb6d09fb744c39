// Command nslab-bench-latency measures, on this machine, what reading the
// run's packets at the receiver costs and what latency the forwarding
// benchmark's router gives (make bench-latency):
//   - the reader's cost: the top rate the receiver gets through the placed
//     forwarding lab without a reader, with one reading every packet, and
//     with one reading a sample (what bench --latency does there), in
//     alternating rounds in one run, each figure a median with its spread,
//     and the ratios to the run without a reader;
//   - the one-way latency at 10, 50 and 90% of the router's top rate
//     (bench --latency-at), with the sampled reader.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nslab/nslab/cmd/internal/benchrun"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// mode is one way of reading the receiver: none, every packet, sampled.
type mode struct {
	name  string
	opts  bench.Options
	rates []float64
}

func main() {
	file := flag.String("lab", "examples/forwarding-benchmark.yaml", "the lab (its first traffic run is measured)")
	rounds := flag.Int("rounds", 5, "rounds of the three modes, alternating")
	dur := flag.Duration("duration", 3*time.Second, "length of each run")
	flag.Parse()
	benchrun.Main("bench-latency", *file, "l", func(m *lab.Manager, l *spec.Lab) int { return run(m, l, *rounds, *dur) })
}

// run measures, the lab deployed by its first run and kept.
func run(m *lab.Manager, l *spec.Lab, rounds int, dur time.Duration) int {
	modes := []*mode{
		{name: "no reader"},
		{name: "reader, every packet", opts: bench.Options{Latency: true, LatencyEvery: 1}},
		{name: "reader, sampled (bench --latency here)", opts: bench.Options{Latency: true}},
	}
	fmt.Printf("the receiver's top rate through the placed lab %s, %s runs at full speed, 64-byte frames, %d rounds alternating:\n", l.File, dur, rounds)
	for r := range rounds {
		for _, md := range modes {
			out, err := benchrun.Sweep(m, l, bench.Request{Options: md.opts}, bench.Selection{Duration: dur})
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench-latency:", err)
				return 1
			}
			rep := out.Reports[0]
			md.rates = append(md.rates, rep.PPS)
			method := ""
			if rep.Latency != nil {
				method = "; " + rep.Latency.Method
			}
			fmt.Printf("  round %d, %-40s %8.0f pps%s\n", r+1, md.name+":", rep.PPS, method)
		}
	}
	base := stats.Median(modes[0].rates)
	fmt.Printf("\nmedians (min..max) and the ratio to no reader:\n")
	for _, md := range modes {
		s := stats.Summarize(md.rates, report.SummaryLevel)
		fmt.Printf("  %-40s %8.0f pps (%.0f..%.0f)  %.3fx\n", md.name, s.Median, s.Min, s.Max, s.Median/base)
	}
	out, err := benchrun.Sweep(m, l, bench.Request{LatencyAt: []float64{0.1, 0.5, 0.9}}, bench.Selection{Duration: dur})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-latency:", err)
		return 1
	}
	fmt.Printf("\none-way latency at 10, 50 and 90%% of the router's top rate (%s runs):\n", dur)
	fmt.Printf("  %-44s %9s %9s %10s %10s %10s %10s %s\n", "load", "pps", "lost", "min", "p50", "p90", "p99", "max")
	for _, r := range out.Reports {
		x := r.Latency
		fmt.Printf("  %-44s %9.0f %9d %10s %10s %10s %10s %s  (%s, %d samples)\n", r.Load, r.PPS, r.Loss, us(x.MinNs), us(x.P50Ns), us(x.P90Ns), us(x.P99Ns), us(x.MaxNs), x.Method, x.Samples)
	}
	return 0
}

func us(ns int64) string { return fmt.Sprintf("%.1f µs", float64(ns)/1e3) }
