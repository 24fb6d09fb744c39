// Command nslab-plot draws nslab bench results as a PNG or SVG file: the
// JSON lines that nslab bench --out writes, read from standard input.
// nslab bench --plot runs it; it is a program of its own so that gonum/plot
// and its font tables stay out of the nslab command's start-up.
//
//	nslab-plot sweep.png < results.jsonl
package main

import (
	"fmt"
	"os"

	"github.com/nslab/nslab/pktgen/bench/plot"
	"github.com/nslab/nslab/pktgen/report"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nslab-plot FILE.png|FILE.svg < results.jsonl (the lines nslab bench --out writes)")
		os.Exit(2)
	}
	if err := draw(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "nslab-plot:", err)
		os.Exit(1)
	}
}

func draw(path string) error {
	in, err := plot.Read(os.Stdin)
	if err != nil {
		return err
	}
	reps, rs := in.Reports, in.Searches
	kinds := 0
	for _, n := range []int{len(reps), len(rs), len(in.RFC2544)} {
		if n > 0 {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return fmt.Errorf("the results mix runs, searches and RFC 2544 benchmarks: plot one kind at a time")
	case len(in.RFC2544) > 0:
		return plot.RFC2544(path, in.RFC2544)
	case len(rs) > 0:
		return plot.Search(path, rs[0].Lab, rs)
	case withLatency(reps):
		return plot.LatencyCDF(path, reps)
	}
	return plot.Sweep(path, reps)
}

// withLatency reports whether the runs carry latency histograms (bench
// --latency, or a TCP run's probe): their plot is the latency's
// distribution.
func withLatency(reps []*report.Report) bool {
	for _, r := range reps {
		if r.Latency != nil && r.Latency.Histogram != "" || r.TCP != nil && r.TCP.Latency != nil {
			return true
		}
	}
	return false
}
