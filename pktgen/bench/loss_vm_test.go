//go:build vmtest

package bench

import (
	"context"
	"math"
	"testing"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
)

// TestVMBurstyLoss: netem's Gilbert-Elliott loss with a mean of 5% in runs
// of 4 on average loses 5% of 20,000 packets within the binomial bounds
// widened for the runs (a loss that comes in runs of mean b varies like
// 2b-1 independent ones: 5 standard deviations of that), in runs of 3 to
// 5 on average; loss: 5% alone loses packets one by one (runs of 1 are
// nine in ten). The run lengths come from the accounting by sequence.
//
// Only netem's drops measure netem: a run in which the counters name
// drops at another place (the emulated CPUs stall for half a second at
// times, and a queue before or after netem overflows in one long run) is
// measured again, up to three times.
func TestVMBurstyLoss(t *testing.T) {
	const n = 20000
	for _, c := range []struct {
		impair string
		burst  float64
	}{{"{loss: {mean: 5%, burst: 4}}", 4}, {"{loss: 5%}", 1}} {
		r := impairedCRS(t, c.impair)
		b := newBench(t, r, func(tr *spec.Traffic) { tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, n, 2000, "userspace" }, Options{Latency: true})
		rep := impairmentOnly(t, b, "qdisc of ns2:veth2")
		s := rep.Sequence
		lost := float64(s.Lost) / n
		sd := math.Sqrt(0.05*0.95/n) * math.Sqrt(2*c.burst-1)
		t.Logf("%s: lost %d of %d (%.2f%%), mean run %.2f, runs %v; %s", c.impair, s.Lost, n, 100*lost, s.MeanLossRun, s.LossRuns, rep.Env.Impairments["ns2:veth2"])
		if math.Abs(lost-0.05) > 5*sd {
			t.Errorf("%s: lost %.3f%%, want 5%% within %.3f%%", c.impair, 100*lost, 500*sd)
		}
		var runs uint64
		for _, k := range s.LossRuns {
			runs += k
		}
		switch {
		case c.burst > 1 && (s.MeanLossRun < 3 || s.MeanLossRun > 5):
			t.Errorf("%s: mean run %.2f, want 3 to 5", c.impair, s.MeanLossRun)
		case c.burst == 1 && float64(s.LossRuns[1]) < 0.9*float64(runs):
			t.Errorf("%s: %d of %d runs of length 1, want nine in ten", c.impair, s.LossRuns[1], runs)
		}
		if f := rep.Fidelity; len(f) != 1 || len(f[0].Checks) == 0 || f[0].Checks[0].What != "loss" || !f[0].Checks[0].OK {
			t.Errorf("%s: fidelity %+v", c.impair, f)
		}
		if s.Lost != uint64(rep.Loss) || rep.Unaccount != 0 {
			t.Errorf("%s: lost by sequence %d, by the counters %d, unaccounted %d", c.impair, s.Lost, rep.Loss, rep.Unaccount)
		}
	}
}

// impairmentOnly runs b until a run's every named drop is at place (at
// most three runs) and returns that run; it fails the test when none is.
func impairmentOnly(t *testing.T, b *Bench, place string) *report.Report {
	t.Helper()
	for try := 1; try <= 3; try++ {
		rep, err := b.Run(context.Background(), 64)
		if err != nil {
			t.Fatal(err)
		}
		var elsewhere []report.Drop
		for _, d := range rep.Drops {
			if d.Place != place {
				elsewhere = append(elsewhere, d)
			}
		}
		if len(elsewhere) == 0 {
			return rep
		}
		t.Logf("run %d: drops at other places than %s, so it does not measure the impairment alone: %+v", try, place, elsewhere)
	}
	t.Fatalf("three runs dropped packets at other places than %s", place)
	return nil
}
