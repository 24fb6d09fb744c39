// Command nslab-bench-forwarding measures, on this machine, what the
// forwarding benchmark lab (examples/forwarding-benchmark.yaml) gives:
// the router's no-drop rate with CPU placement (the sender on one CPU, the
// router's receive work on another) and without it, and the sender's top
// rate, each the median of several searches with their spread. It then
// checks the placed rate found: three plain runs at it, and one 10% above
// (make bench-forwarding).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/labname"
	"github.com/nslab/nslab/topology/spec"
)

func main() {
	file := flag.String("lab", "examples/forwarding-benchmark.yaml", "the lab (its first traffic run is measured)")
	rounds := flag.Int("rounds", 3, "searches per mode (the median is reported)")
	trial := flag.Duration("trial", 2*time.Second, "length of each search trial")
	confirm := flag.Int("confirm", 3, "trials in a row the rate found must pass")
	flag.Parse()
	if err := lab.CheckPrivileges(); err != nil {
		fail(err)
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		fail(err)
	}
	so := bench.SearchOptions{Trial: *trial, Confirm: *confirm}
	var placed, unplaced, top []float64
	for r := 0; r < *rounds; r++ {
		s := search(data, "on", so)
		placed, top = append(placed, s.ThroughputPPS), append(top, s.Trials[0].SentPPS)
		fmt.Printf("round %d, placed:   no-drop %8.0f pps, the sender's top rate %8.0f pps; %s\n", r+1, s.ThroughputPPS, s.Trials[0].SentPPS, s.Bottleneck)
		u := search(data, "off", so)
		unplaced = append(unplaced, u.ThroughputPPS)
		fmt.Printf("round %d, unplaced: no-drop %8.0f pps (sender-limited: %v); %s\n", r+1, u.ThroughputPPS, u.SenderLimited, u.Bottleneck)
	}
	fmt.Printf("\nmedian of %d (spread min..max), 64-byte frames, trials of %s, the rate found passing %d trials in a row:\n", *rounds, *trial, *confirm)
	report("router's no-drop rate, with placement", placed)
	report("router's no-drop rate, without placement", unplaced)
	report("sender's top rate (placed lab, at full speed)", top)
	recheck(data, median(placed))
}

// search runs one throughput search of the lab's first traffic run under
// a fresh name, with the placement mode given.
func search(data []byte, placement string, so bench.SearchOptions) *bench.SearchResult {
	name := labname.Random("f")
	l, err := spec.Parse(name+".yaml", labname.Rename(data, name))
	if err != nil {
		fail(err)
	}
	t, err := bench.Traffic(l, bench.Selection{})
	if err != nil {
		fail(err)
	}
	m := &lab.Manager{StateDir: tempDir()}
	defer func() { _ = os.RemoveAll(m.StateDir) }() // a temporary directory: best effort
	out, err := bench.Sweep(context.Background(), m, bench.Request{Lab: l, Traffic: t, Search: &so, Placement: placement})
	if err != nil {
		fail(err)
	}
	return out.Searches[0]
}

// recheck runs the placed lab three times at the rate found and once 10%
// above it, as plain runs.
func recheck(data []byte, pps float64) {
	fmt.Printf("\nplain runs of 5 s at the median placed rate, and 10%% above it:\n")
	name := labname.Random("f")
	l, err := spec.Parse(name+".yaml", labname.Rename(data, name))
	if err != nil {
		fail(err)
	}
	m := &lab.Manager{StateDir: tempDir()}
	defer func() { _ = os.RemoveAll(m.StateDir) }() // a temporary directory: best effort
	// The first run deploys the lab and keeps it; the others use it as
	// deployed, and a bench never destroys a lab it did not deploy.
	destroy := func() {
		if _, err := m.Destroy(l.Name); err != nil {
			fmt.Fprintln(os.Stderr, "bench-forwarding: destroy:", err)
		}
	}
	defer destroy()
	die := func(err error) { destroy(); fail(err) } // fail exits: no defer runs
	held := 0
	var above int64
	for i, rate := range []float64{pps, pps, pps, pps * 1.1} {
		t, err := bench.Traffic(l, bench.Selection{Rate: fmt.Sprintf("%.0fpps", rate), Duration: 5 * time.Second})
		if err != nil {
			die(err)
		}
		out, err := bench.Sweep(context.Background(), m, bench.Request{Lab: l, Traffic: t, Placement: "on", Keep: true})
		if err != nil {
			die(err)
		}
		r := out.Reports[0]
		fmt.Printf("  %8.0f pps offered: sent %d, received %d, lost %d (%.3f%%); %s\n", rate, r.Sent, r.Received, r.Loss, r.LossPct, r.Bottleneck)
		switch {
		case i < 3 && r.Loss == 0:
			held++
		case i == 3:
			above = r.Loss
		}
	}
	fmt.Printf("the rate found held in %d of 3 plain runs; 10%% above it, %d packets were lost\n", held, above)
}

func report(what string, v []float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	fmt.Printf("  %-48s %9.0f pps  (%.0f..%.0f)\n", what, median(v), s[0], s[len(s)-1])
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func tempDir() string {
	d, err := os.MkdirTemp("", "nslab-bench-fwd-")
	if err != nil {
		fail(err)
	}
	return d
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-forwarding:", err)
	os.Exit(1)
}
