package bench

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/spec"
)

// TestJudgeSetup: the validity rules on synthetic set-ups. A duet at full
// load shares the routers' backlog whatever the figure; the rate received
// cannot move where nothing was lost (at a fixed rate: the offered rate;
// at full load: the senders' top rate); the routers' cost per packet moves
// at any load; the rate at overload moves when the routers dropped.
func TestJudgeSetup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     setup
		valid bool
		want  string
	}{
		{"duet, full load, shared router CPU", setup{duet: true, fullLoad: true, figure: "pps", routerCPUs: []int{1}, twinCPUs: []int{1}}, false, "drain one backlog (cpu1)"},
		{"duet, full load, overlapping CPUs", setup{duet: true, fullLoad: true, figure: "pps", routerCPUs: []int{1, 2}, twinCPUs: []int{2, 3}}, false, "drain one backlog (cpu1,2)"},
		{"duet, full load, one CPU per twin", setup{duet: true, fullLoad: true, figure: "pps", routerCPUs: []int{1}, twinCPUs: []int{2}}, true, "a backlog of their own (cpu1 and cpu2)"},
		{"duet, full load, not placed", setup{duet: true, fullLoad: true, figure: "router_ns_per_packet"}, false, "the CPUs the packets arrive on"},
		{"duet, fixed rate, cost", setup{duet: true, rate: "100000 pps", figure: "router_relative_cost", routerCPUs: []int{1}, measured: true, lossless: true}, true, "at 100000 pps"},
		{"sequential, fixed rate, pps, no loss", setup{rate: "100000 pps", figure: "pps", measured: true, lossless: true}, false, "is the rate offered"},
		{"sequential, fixed rate, pps, loss", setup{rate: "900000 pps", figure: "pps", measured: true}, true, "no rule"},
		{"sequential, full load, pps, no loss", setup{fullLoad: true, figure: "pps", measured: true, lossless: true}, false, "senders' top rate"},
		{"sequential, full load, pps, loss", setup{fullLoad: true, figure: "pps", measured: true, routerCPUs: []int{1}}, true, "what they forward"},
		{"sequential, full load, pps, before any trial", setup{fullLoad: true, figure: "pps"}, true, "what they forward"},
		{"sequential, full load, cost", setup{fullLoad: true, figure: "router_ns_per_packet", measured: true}, true, "at any load"},
		{"a search's figure", setup{figure: "NDR conditional_throughput_pps", measured: true, lossless: true}, true, "no rule"},
	} {
		v := judgeSetup(tc.s)
		if v.valid != tc.valid || !strings.Contains(v.why, tc.want) {
			t.Errorf("%s: valid %v (%s); want %v and %q", tc.name, v.valid, v.why, tc.valid, tc.want)
		}
	}
}

// ruleCost is examples/rule-cost.yaml with a traffic run at full load.
func ruleCost(t *testing.T) *spec.Lab {
	t.Helper()
	data, err := os.ReadFile("../../examples/rule-cost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Parse("rule-cost.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestFullLoadDuetReplaced: a duet asked for by default at full load is
// measured in sequential pairs, and the decision's set-up says why; asked
// for by name (--duet) it is refused with the fix.
func TestFullLoadDuetReplaced(t *testing.T) {
	l := ruleCost(t)
	flood := *l.Traffic[0]
	flood.RatePPS = 0
	req := Request{Lab: l, Traffic: &flood, Variants: []string{"rules2", "rules4"}, Duet: true, DuetAuto: true}
	if err := req.settleDuet(); err != nil || req.Duet || !strings.Contains(req.replaced, "drain one backlog (cpu1)") {
		t.Fatalf("auto: %v, duet %v, replaced %q", err, req.Duet, req.replaced)
	}
	req = Request{Lab: l, Traffic: &flood, Variants: []string{"rules2", "rules4"}, Duet: true}
	if err := req.settleDuet(); err == nil || !strings.Contains(err.Error(), "give the traffic a rate the routers hold") {
		t.Fatalf("asked for: %v", err)
	}
	req = Request{Lab: l, Traffic: l.Traffic[0], Variants: []string{"rules2", "rules4"}, Duet: true}
	if err := req.settleDuet(); err != nil || !req.Duet {
		t.Fatalf("at a fixed rate: %v, duet %v", err, req.Duet)
	}
}

// TestAddControl: the control variant is the base variant's lab with N
// rules that match nothing appended on every forwarding node, in both
// families' benchmarking ranges; the lab's own variants are unchanged.
func TestAddControl(t *testing.T) {
	l := ruleCost(t)
	before := len(l.Variant("rules2").Lab.Node("r1").Firewall.Rules)
	nodes, err := addControl(l, "rules2", controlName(l), 3)
	if err != nil || len(nodes) != 1 || nodes[0] != "r1" {
		t.Fatalf("%v, %v", nodes, err)
	}
	v := l.Variant("control")
	fw := v.Lab.Node("r1").Firewall
	if v == nil || len(fw.Rules) != before+3 || fw.Rules[before].Match.From.String() != "198.18.0.0/24" || fw.Rules[before+2].Verdict != spec.Drop {
		t.Fatalf("control variant %+v, firewall %+v", v, fw)
	}
	if len(l.Variant("rules2").Lab.Node("r1").Firewall.Rules) != before || l.Node("r1").Firewall != nil && len(l.Node("r1").Firewall.Rules) != 0 {
		t.Error("the control changed the lab's own variant or the lab")
	}
	if controlName(l) != "control-nslab" {
		t.Errorf("a second control's name: %s", controlName(l))
	}
	if p := controlPrefix(258, true); p.String() != "2001:2:0:102::/64" {
		t.Errorf("v6 prefix %s", p)
	}
	bad, err := spec.Parse("x.yaml", []byte("name: x\nnodes:\n  a:\n    interfaces: {e0: {addresses: [198.19.0.1/24]}}\n  r:\n    forwarding: true\n    interfaces: {e0: {addresses: [198.19.0.2/24]}}\nlinks:\n  - endpoints: [a:e0, r:e0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := addControl(bad, spec.BaseVariant, "control", 2); err == nil || !strings.Contains(err.Error(), "would match the lab's own packets") {
		t.Errorf("a lab in the benchmarking range: %v", err)
	}
}

// TestNoChangeNeedsControl: "no change" stands only with a positive
// control of the same figure that moved; without one, or with one that
// did not move, the decision is cannot tell, saying why. A pinned figure
// is cannot tell whatever the pairs said.
func TestNoChangeNeedsControl(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no saved control
	l := ruleCost(t)
	req := Request{Lab: l, Traffic: l.Traffic[0], Variants: []string{"rules1", "same"}, Duet: true}
	reps := []*report.Report{{Loss: 0}, {Loss: 0}}
	same := func() *report.Decision {
		return &report.Decision{Figure: "router_relative_cost", Outcome: stats.Same}
	}
	d := same()
	if got := req.judge(d, "why", reps, stats.Same); got != stats.CannotTell || !strings.Contains(d.Decision, "no positive control has shown that router_relative_cost moves in this set-up (duet at 100000 pps)") {
		t.Errorf("no control: %s, %q", got, d.Decision)
	}
	req.control = &report.Control{Figure: "router_relative_cost", Seen: true, Sentence: "seen"}
	d = same()
	if got := req.judge(d, "why", reps, stats.Same); got != stats.Same || d.Control == nil || d.Validity == "" || d.Setup != "duet at 100000 pps" {
		t.Errorf("a control that moved: %s, %+v", got, d)
	}
	req.control = &report.Control{Figure: "router_relative_cost", Sentence: "this set-up cannot see it"}
	d = same()
	if got := req.judge(d, "why", reps, stats.Same); got != stats.CannotTell || !strings.Contains(d.Decision, "did not move for a known cost") {
		t.Errorf("a control that did not move: %s, %q", got, d.Decision)
	}
	d = &report.Decision{Figure: "pps", Outcome: stats.Different}
	if got := req.judge(d, "why", reps, stats.Different); got != stats.CannotTell || !strings.Contains(d.Decision, "is the rate offered") {
		t.Errorf("pps at a rate held without loss: %s, %q", got, d.Decision)
	}
}

// TestExpectedChange: a cost figure rises by the added cost over A's; the
// rate of routers that are the limit falls to A's cost over the new one.
func TestExpectedChange(t *testing.T) {
	if got := expectedChange("router_ns_per_packet", 1000, 250); got != 25 {
		t.Errorf("cost: %g", got)
	}
	if got := expectedChange("pps", 1000, 250); math.Abs(got+20) > 1e-9 {
		t.Errorf("rate: %g", got)
	}
	if got := expectedChange("latency_p50_ns", 1000, 250); got != 0 {
		t.Errorf("no expectation for latency: %g", got)
	}
}
