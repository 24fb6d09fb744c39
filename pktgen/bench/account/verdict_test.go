package account

import (
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/spec"
)

// crsPath is the hops of the client-router-server lab.
var crsPath = []walk.Hop{{Node: "ns1", Out: "veth1"}, {Node: "ns2", In: "veth1-peer", Out: "veth2"}, {Node: "ns3", In: "veth2-peer"}}

// verdictOf judges a report made of the given measurements.
func verdictOf(drops []report.Drop, softnet []report.SoftnetCPU, cpu []report.CPUUse, p Placement, offered uint64) report.Verdict {
	r := &report.Report{Path: crsPath, Drops: drops, Softnet: softnet, CPU: cpu, OfferedPPS: offered, Sent: 1000000,
		Elapsed: time.Second, Result: &engine.Result{Threads: []engine.ThreadResult{{}}}, Env: report.Env{Sysctls: map[string]string{"net.core.netdev_max_backlog": "1000"}}}
	for _, d := range drops {
		r.NamedDrops += d.Packets
	}
	r.Loss = int64(r.NamedDrops)
	Judge(r, p, 1e6)
	return r.Verdict
}

// TestVerdicts: each verdict follows from the measurements it is given.
func TestVerdicts(t *testing.T) {
	placed := Placement{ByNode: map[string]spec.CPUSet{"ns2": {1}}, NAPI: map[string]bool{}, Sender: spec.CPUSet{0}}
	busy := []report.CPUUse{{CPU: "cpu0", N: 0, System: 95, Idle: 5}, {CPU: "cpu1", N: 1, SoftIRQ: 98, Idle: 2}}
	idle := []report.CPUUse{{CPU: "cpu0", N: 0, System: 95, Idle: 5}, {CPU: "cpu1", N: 1, SoftIRQ: 20, Idle: 80}}
	link := report.Drop{Place: "link ns1:veth1 -> ns2:veth1-peer", Packets: 500, Node: "ns2"}
	cases := []struct {
		name     string
		v        report.Verdict
		limit    string
		node     string
		contains string
	}{
		{"router saturated", verdictOf([]report.Drop{link}, []report.SoftnetCPU{{CPU: 1, Dropped: 500}}, busy, placed, 0), "router", "ns2", "500 backlog drops on cpu1"},
		{"router not saturated", verdictOf([]report.Drop{link}, []report.SoftnetCPU{{CPU: 1, Dropped: 500}}, idle, placed, 0), "router", "ns2", "fills in 1.0 ms while the CPU processes nothing"},
		{"no placement", verdictOf([]report.Drop{link}, []report.SoftnetCPU{{CPU: 0, Dropped: 500}}, busy, Placement{}, 0), "router", "ns2", "no placement"},
		{"not backlog", verdictOf([]report.Drop{{Place: link.Place, Packets: 500, Node: "ns2", Cause: "MTU"}}, nil, busy, placed, 0), "link", "ns1:veth1 -> ns2:veth1-peer", "MTU"},
		{"inside", verdictOf([]report.Drop{{Place: "inside router ns2", Packets: 7, Node: "ns2", Cause: "IP MIB of ns2: OutNoRoutes 7"}}, nil, busy, placed, 0), "router", "ns2", "OutNoRoutes 7"},
		{"sender", verdictOf(nil, nil, busy, placed, 0), "sender", "ns1", "cpu0 95% sys"},
		{"offered", verdictOf(nil, nil, busy, placed, 1000000), "offered rate", "", "1000000 pps offered"},
		{"held back", verdictOf(nil, nil, []report.CPUUse{{CPU: "cpu0", N: 0, System: 50, Idle: 50}, {CPU: "cpu1", N: 1, System: 99, Idle: 1}}, placed, 0), "router", "ns2", "held back"},
	}
	// Whose work a CPU figure was: what the placement put there.
	withRoles := []report.CPUUse{{CPU: "cpu0", N: 0, System: 95, Idle: 5, Roles: []string{"sender ns1", "nslab sampler"}}, {CPU: "cpu1", N: 1, SoftIRQ: 90, Idle: 10, Roles: []string{"router ns2"}}}
	if got := verdictOf([]report.Drop{link}, []report.SoftnetCPU{{CPU: 1, Dropped: 500}}, withRoles, placed, 0).Line(); !strings.Contains(got, "cpu1 of router ns2: 90% softirq") {
		t.Errorf("a router's CPU in the verdict does not say whose: %q", got)
	}
	if got := verdictOf(nil, nil, withRoles, placed, 0).Line(); !strings.Contains(got, "cpu0 of sender ns1, nslab sampler: 95% sys") {
		t.Errorf("the sender's CPU in the verdict does not say whose: %q", got)
	}
	stalled := &report.Report{Path: crsPath, CPU: busy, Sent: 1000000, Elapsed: time.Second,
		Result: &engine.Result{Threads: []engine.ThreadResult{{}}, Behind: 12 * time.Millisecond}, Env: report.Env{Sysctls: map[string]string{}}}
	Judge(stalled, placed, 1e6)
	if line := stalled.Verdict.Line(); stalled.Verdict.Limit != "sender" || !strings.Contains(line, "was off its CPU for 12ms") {
		t.Errorf("a sender that gave up 12 ms of its schedule: %q", line)
	}
	// The same stall in a paced run: 19,520 pps over 3 s, 20,000 over the
	// time the thread ran: the offered rate, with the stall said.
	paced := &report.Report{Path: crsPath, CPU: busy, Sent: 58560, Elapsed: 3 * time.Second, OfferedPPS: 20000,
		Result: &engine.Result{Threads: []engine.ThreadResult{{}}, Behind: 72 * time.Millisecond}, Env: report.Env{Sysctls: map[string]string{}}}
	Judge(paced, placed, 19520)
	if line := paced.Verdict.Line(); paced.Verdict.Limit != "offered rate" || !strings.Contains(line, "was off its CPU for 72ms") {
		t.Errorf("a paced sender that gave up 72 ms of 3 s: %q", line)
	}
	paced.Result.Behind = 0
	Judge(paced, placed, 19520)
	if paced.Verdict.Limit != "sender" {
		t.Errorf("a paced sender 2.4%% short with no stall: %q, want the sender", paced.Verdict.Line())
	}
	if v := verdictOf([]report.Drop{link}, []report.SoftnetCPU{{CPU: 1, Dropped: 500}}, idle, placed, 0); !v.Bursts {
		t.Error("drops on a CPU 20% busy are not marked as bursts")
	}
	if v := verdictOf([]report.Drop{link}, []report.SoftnetCPU{{CPU: 1, Dropped: 500}}, busy, placed, 0); v.Bursts {
		t.Error("drops on a CPU 98% busy are marked as bursts")
	}
	for _, c := range cases {
		line := c.v.Line()
		if c.v.Limit != c.limit || c.v.Node != c.node || !strings.Contains(line, c.contains) {
			t.Errorf("%s: %q (limit %q node %q), want %s %s with %q", c.name, line, c.v.Limit, c.v.Node, c.limit, c.node, c.contains)
		}
	}
}

// TestShaperVerdict: a run that lost nothing and delivered a shaper's rate
// names the shaper, with the rate carried, its queue's depth in the
// samples taken while sending (not those after) and the waiting it added;
// a run well under the shaper's rate is the sender's.
func TestShaperVerdict(t *testing.T) {
	busy := []report.CPUUse{{CPU: "cpu0", N: 0, System: 80, Idle: 20}, {CPU: "cpu1", N: 1, SoftIRQ: 10, Idle: 90}}
	shaped := func(pps float64) report.Report {
		samples := []sample.Sample{{At: 0, Counters: []sample.Counters{{QdiscQueued: 0}}}, {At: time.Second, Counters: []sample.Counters{{QdiscQueued: 200}}},
			{At: 2 * time.Second, Counters: []sample.Counters{{QdiscQueued: 280}}}, {At: 4 * time.Second, Counters: []sample.Counters{{QdiscQueued: 900}}}}
		return report.Report{Path: crsPath, CPU: busy, Frame: 64, PPS: pps, Sent: uint64(3 * pps), Received: uint64(3 * pps), Elapsed: 3 * time.Second,
			Targets: []sample.Target{{Node: "ns1", Interface: "veth1"}}, Samples: samples, Shapers: map[string]uint64{"ns1:veth1": 20_000_000},
			Env: report.Env{Impairments: map[string]string{"ns1:veth1": "tbf rate 20Mbit limit 1000"}}, Result: &engine.Result{Threads: []engine.ThreadResult{{}}}}
	}
	r := shaped(41_700) // 41,700 frames of 60 bytes a second: 20.0 Mbit/s
	Judge(&r, Placement{}, r.PPS)
	want := "shaper ns1:veth1 (tbf rate 20Mbit limit 1000: carried 20.02 Mbit/s, 100% of its rate, its queue held up to 280 packets (mean 160 in 3 samples): up to 6.72 ms of waiting, the path dropped nothing)"
	if r.Bottleneck != want {
		t.Errorf("verdict\n %q, want\n %q", r.Bottleneck, want)
	}
	r = shaped(20_000)
	Judge(&r, Placement{}, r.PPS)
	if r.Verdict.Limit != "sender" {
		t.Errorf("a run at half the shaper's rate: %q, want the sender", r.Bottleneck)
	}
}

// TestSeveralSenders: a group limited by its senders names each sending
// node once, and the line says "senders".
func TestSeveralSenders(t *testing.T) {
	reps := []*report.Report{{From: "h1:eth0"}, {From: "h2:eth0"}, {From: "h1:eth1"}}
	v := report.Verdict{Limit: "sender", Node: strings.Join(SenderNodes(reps), ", "), Evidence: []string{"cpu0 100% sys"}}
	if got, want := v.Line(), "senders h1, h2 (cpu0 100% sys)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := (report.Verdict{Limit: "sender", Node: "h1"}).Line(), "sender h1"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestVerdictLoop: named drops beyond the loss leave the verdict unknown;
// a router whose IP MIB counted header errors (a TTL run out) is named as
// the sign of a routing loop, and a run without one names none.
func TestVerdictLoop(t *testing.T) {
	for _, c := range []struct {
		discards map[string]uint64
		loop     bool
	}{{map[string]uint64{"InHdrErrors": 15, "InNoRoutes": 3}, true}, {map[string]uint64{"InNoRoutes": 3}, false}} {
		r := &report.Report{Path: crsPath, Sent: 1000, Loss: 233, NamedDrops: 251, Unaccount: -18, Elapsed: time.Second,
			Routers: []report.RouterCounts{{Node: "ns2", Discards: c.discards}}, Result: &engine.Result{Threads: []engine.ThreadResult{{}}}, Env: report.Env{Sysctls: map[string]string{}}}
		Judge(r, Placement{}, 1000)
		ev := strings.Join(r.Verdict.Evidence, "\n")
		if r.Verdict.Limit != "unknown" || strings.Contains(ev, "a routing loop, by router ns2's IP MIB: 15 header errors") != c.loop || strings.Contains(ev, "routing loop") != c.loop {
			t.Errorf("discards %v: verdict %s: %s", c.discards, r.Verdict.Limit, ev)
		}
	}
}
