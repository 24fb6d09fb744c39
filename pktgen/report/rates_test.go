package report

import (
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/sample"
)

// TestSteadyWindowIsTheSending: the steady window takes only samples of
// the sending; a short run whose path drains for seconds after it (an
// impairment's queue, another host's) has none, and says so by leaving it
// out, rather than a rate of the draining.
func TestSteadyWindowIsTheSending(t *testing.T) {
	samples := func(n int, rx ...uint64) []sample.Sample {
		var out []sample.Sample
		for i := 0; i < n; i++ {
			out = append(out, sample.Sample{At: time.Duration(i) * time.Second, Counters: []sample.Counters{{RxPackets: rx[i]}}})
		}
		return out
	}
	long := &Report{Frame: 64, Elapsed: 5 * time.Second, Received: 500, Hops: make([]HopCounters, 1), Samples: samples(6, 0, 100, 200, 300, 400, 500)}
	long.Rates()
	if long.SteadyPPS != 100 {
		t.Errorf("a 5 s run at 100 pps: steady %v pps", long.SteadyPPS)
	}
	short := &Report{Frame: 64, Elapsed: 200 * time.Millisecond, Received: 500, Hops: make([]HopCounters, 1), Samples: samples(6, 0, 300, 350, 400, 450, 500)}
	short.Rates()
	if short.SteadyPPS != 0 {
		t.Errorf("a 0.2 s run draining for 5 s: steady window %v pps, want none", short.SteadyPPS)
	}
}
