package bench

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
func verdictOf(drops []report.Drop, softnet []report.SoftnetCPU, cpu []report.CPUUse, p placement, offered uint64) report.Verdict {
	r := &report.Report{Path: crsPath, Drops: drops, Softnet: softnet, CPU: cpu, OfferedPPS: offered, Sent: 1000000,
		Elapsed: time.Second, Result: &engine.Result{Threads: []engine.ThreadResult{{}}}, Env: report.Env{Sysctls: map[string]string{"net.core.netdev_max_backlog": "1000"}}}
	for _, d := range drops {
		r.NamedDrops += d.Packets
	}
	r.Loss = int64(r.NamedDrops)
	judge(r, p, 1e6)
	return r.Verdict
}

// TestVerdicts: each verdict follows from the measurements it is given.
func TestVerdicts(t *testing.T) {
	placed := placement{byNode: map[string]spec.CPUSet{"ns2": {1}}, napi: map[string]bool{}, sender: spec.CPUSet{0}}
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
		{"no placement", verdictOf([]report.Drop{link}, []report.SoftnetCPU{{CPU: 0, Dropped: 500}}, busy, placement{}, 0), "router", "ns2", "no placement"},
		{"not backlog", verdictOf([]report.Drop{{Place: link.Place, Packets: 500, Node: "ns2", Cause: "MTU"}}, nil, busy, placed, 0), "link", "ns1:veth1 -> ns2:veth1-peer", "MTU"},
		{"inside", verdictOf([]report.Drop{{Place: "inside router ns2", Packets: 7, Node: "ns2", Cause: "IP MIB of ns2: OutNoRoutes 7"}}, nil, busy, placed, 0), "router", "ns2", "OutNoRoutes 7"},
		{"sender", verdictOf(nil, nil, busy, placed, 0), "sender", "ns1", "cpu0 95% sys"},
		{"offered", verdictOf(nil, nil, busy, placed, 1000000), "offered rate", "", "1000000 pps offered"},
		{"held back", verdictOf(nil, nil, []report.CPUUse{{CPU: "cpu0", N: 0, System: 50, Idle: 50}, {CPU: "cpu1", N: 1, System: 99, Idle: 1}}, placed, 0), "router", "ns2", "held back"},
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

// TestSeveralSenders: a group limited by its senders names each sending
// node once, and the line says "senders".
func TestSeveralSenders(t *testing.T) {
	reps := []*report.Report{{From: "h1:eth0"}, {From: "h2:eth0"}, {From: "h1:eth1"}}
	v := report.Verdict{Limit: "sender", Node: strings.Join(senderNodes(reps), ", "), Evidence: []string{"cpu0 100% sys"}}
	if got, want := v.Line(), "senders h1, h2 (cpu0 100% sys)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := (report.Verdict{Limit: "sender", Node: "h1"}).Line(), "sender h1"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestIntervalDrops: a veth drop counted at both ends of its link is one
// drop in the live lines.
func TestIntervalDrops(t *testing.T) {
	roles := []string{"sender", "ingress", "egress", "receiver"}
	a := make([]sample.Counters, 4)
	b := []sample.Counters{{TxDropped: 10}, {RxDropped: 10}, {TxDropped: 5}, {RxDropped: 5}}
	if got := intervalDrops(a, b, roles); got != 15 {
		t.Errorf("got %d drops, want 15", got)
	}
}
