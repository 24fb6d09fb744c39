package account

import (
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/stall"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// TestFidelity: each check of an impaired interface follows from its
// counters: a loss within the binomial bounds passes and one outside
// fails (bursty loss has wider bounds); a shaper offered less than its
// rate is flagged as untested; a delay whose median misses names the
// host's stalls.
func TestFidelity(t *testing.T) {
	egress := func(c sample.Counters) []report.HopCounters {
		return []report.HopCounters{{Target: sample.Target{Node: "r", Interface: "e1"}, Role: "egress", Counters: c}}
	}
	run := func(m spec.Impair, c sample.Counters, edit func(*report.Report)) report.LinkFidelity {
		r := &report.Report{Hops: egress(c), Elapsed: time.Second}
		if edit != nil {
			edit(r)
		}
		kernel := m
		kernel.LossBurst = 0 // the kernel's read-back has no runs: they come from the file
		Fidelity(r, map[string]*qdisc.State{"r:e1": {Kind: m.Qdisc(), Impair: &kernel}}, 64, func(string) *spec.Impair { return &m })
		if len(r.Fidelity) != 1 {
			t.Fatalf("%s: %d fidelity lines", &m, len(r.Fidelity))
		}
		return r.Fidelity[0]
	}
	// 1% of 100,000: 3.29 sd is 0.103%.
	if f := run(spec.Impair{Loss: 1}, sample.Counters{TxPackets: 99000, QdiscDrops: 1000}, nil); !f.Checks[0].OK || f.Flag != "" {
		t.Errorf("1.000%% lost for 1%%: %+v", f)
	}
	if f := run(spec.Impair{Loss: 1}, sample.Counters{TxPackets: 98800, QdiscDrops: 1200}, nil); f.Checks[0].OK || !strings.Contains(f.Flag, "did not do what the file says: asked loss 1%, delivered 1.200%") {
		t.Errorf("1.200%% lost for 1%%: %+v", f)
	}
	if f := run(spec.Impair{Loss: 1, LossBurst: 4}, sample.Counters{TxPackets: 98800, QdiscDrops: 1200}, nil); !f.Checks[0].OK || f.Checks[0].Asked != "1% in runs of 4" {
		t.Errorf("1.200%% lost for 1%% in runs of 4 (bounds 2.6 times wider): %+v", f)
	}
	f := run(spec.Impair{Rate: 10e6}, sample.Counters{TxPackets: 100, TxBytes: 6000}, nil)
	if c := f.Checks[0]; !c.Untested || c.OK || !strings.Contains(f.Flag, "its rate of 10Mbit was not tested: the sender could not offer it") {
		t.Errorf("a shaper offered 48 kbit/s: %+v", f)
	}
	f = run(spec.Impair{Rate: 10e6}, sample.Counters{TxPackets: 20000, TxBytes: 1_250_000, QdiscDrops: 30000}, nil)
	if c := f.Checks[0]; !c.OK || !strings.Contains(c.Delivered, "10.00 Mbit/s, 100.0% of it (offered 24.00 Mbit/s)") {
		t.Errorf("a shaper offered 24 Mbit/s: %+v", f)
	}
	late := func(r *report.Report) {
		r.Latency = &receive.Latency{Samples: 1000, MinNs: int64(20 * time.Millisecond), P50Ns: int64(23400 * time.Microsecond), P99Ns: int64(30 * time.Millisecond), MaxNs: int64(41 * time.Millisecond)}
		r.Stalls = &stall.Summary{Stalls: 7, TotalNs: 12 * time.Millisecond}
	}
	f = run(spec.Impair{Delay: 20 * time.Millisecond}, sample.Counters{TxPackets: 1000}, late)
	if c := f.Checks[0]; c.OK || !strings.Contains(f.Flag, "asked delay 20ms, delivered p50 23.4ms (min 20ms, p99 30ms, max 41ms; 1000 samples): the host stalled 7 times (12ms in all)") {
		t.Errorf("23.4 ms for 20 ms: %+v", f)
	}
	// A TCP run: the delay is the probe's alone, before the flows queued.
	probe := func(r *report.Report) {
		r.TCP = &report.TCPRun{Latency: &report.TCPLatency{Idle: &receive.Latency{Samples: 100, MinNs: int64(20 * time.Millisecond), P50Ns: int64(20100 * time.Microsecond),
			P99Ns: int64(21 * time.Millisecond), MaxNs: int64(22 * time.Millisecond)}, Loaded: &receive.Latency{Samples: 500, P50Ns: int64(300 * time.Millisecond)}}}
	}
	f = run(spec.Impair{Delay: 20 * time.Millisecond}, sample.Counters{TxPackets: 1000}, probe)
	if c := f.Checks[0]; !c.OK || !strings.Contains(c.Delivered, "p50 20.1ms (min 20ms, p99 21ms, max 22ms; 100 samples of the latency probe alone, before the flows)") {
		t.Errorf("a TCP run's 20 ms: %+v", f)
	}
	// A shaper whose queue held packets was offered more than its rate,
	// whatever the run's frame size says (a group's other runs, GSO).
	full := func(r *report.Report) {
		r.Samples = []sample.Sample{{Counters: []sample.Counters{{QdiscQueued: 80}}}, {At: time.Second / 2, Counters: []sample.Counters{{QdiscQueued: 120}}}}
	}
	f = run(spec.Impair{Rate: 10e6}, sample.Counters{TxPackets: 800, TxBytes: 1_200_000}, full)
	if c := f.Checks[0]; !c.OK || c.Untested || !strings.Contains(c.Delivered, "offered more: its queue held 100 packets on average") {
		t.Errorf("a shaper whose queue held 100 packets: %+v", f)
	}
}
