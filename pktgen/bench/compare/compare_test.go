package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

// TestJudgeSetup: the validity rules on synthetic set-ups. A duet at full
// load shares the routers' backlog whatever the figure; the rate received
// cannot move where nothing was lost (at a fixed Rate: the offered rate;
// at full load: the senders' top rate); the routers' cost per packet moves
// at any load; the rate at overload moves when the routers dropped.
func TestJudgeSetup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     Setup
		valid bool
		want  string
	}{
		{"duet, full load, shared router CPU", Setup{Duet: true, FullLoad: true, Figure: "pps", RouterCPUs: []int{1}, TwinCPUs: []int{1}}, false, "drain one backlog (cpu1)"},
		{"duet, full load, overlapping CPUs", Setup{Duet: true, FullLoad: true, Figure: "pps", RouterCPUs: []int{1, 2}, TwinCPUs: []int{2, 3}}, false, "drain one backlog (cpu1,2)"},
		{"duet, full load, one CPU per twin", Setup{Duet: true, FullLoad: true, Figure: "pps", RouterCPUs: []int{1}, TwinCPUs: []int{2}}, true, "a backlog of their own (cpu1 and cpu2)"},
		{"duet, full load, not placed", Setup{Duet: true, FullLoad: true, Figure: "router_ns_per_packet"}, false, "the CPUs the packets arrive on"},
		{"duet, fixed rate, cost", Setup{Duet: true, Rate: "100000 pps", Figure: "router_relative_cost", RouterCPUs: []int{1}, Measured: true, Lossless: true}, true, "at 100000 pps"},
		{"sequential, fixed rate, pps, no loss", Setup{Rate: "100000 pps", Figure: "pps", Measured: true, Lossless: true}, false, "is the rate offered"},
		{"sequential, fixed rate, pps, loss", Setup{Rate: "900000 pps", Figure: "pps", Measured: true}, true, "no rule"},
		{"sequential, full load, pps, no loss", Setup{FullLoad: true, Figure: "pps", Measured: true, Lossless: true}, false, "senders' top rate"},
		{"sequential, full load, pps, loss", Setup{FullLoad: true, Figure: "pps", Measured: true, RouterCPUs: []int{1}}, true, "what they forward"},
		{"sequential, full load, pps, before any trial", Setup{FullLoad: true, Figure: "pps"}, true, "what they forward"},
		{"sequential, full load, cost", Setup{FullLoad: true, Figure: "router_ns_per_packet", Measured: true}, true, "at any load"},
		{"a search's figure", Setup{Figure: "NDR conditional_throughput_pps", Measured: true, Lossless: true}, true, "no rule"},
	} {
		v := Judge(tc.s)
		if v.Valid != tc.valid || !strings.Contains(v.Why, tc.want) {
			t.Errorf("%s: valid %v (%s); want %v and %q", tc.name, v.Valid, v.Why, tc.valid, tc.want)
		}
	}
}

// TestAddControl: the control variant is the base variant's lab with N
// rules that match nothing appended on every forwarding node, in both
// families' benchmarking ranges; the lab's own variants are unchanged.
func TestAddControl(t *testing.T) {
	l, err := spec.ReadFile("../../../examples/rule-cost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before := len(l.Variant("rules2").Lab.Node("r1").Firewall.Rules)
	nodes, err := AddControl(l, "rules2", ControlName(l), 3)
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
	if ControlName(l) != "control-nslab" {
		t.Errorf("a second control's name: %s", ControlName(l))
	}
	if p := controlPrefix(258, true); p.String() != "2001:2:0:102::/64" {
		t.Errorf("v6 prefix %s", p)
	}
	bad, err := spec.Parse("x.yaml", []byte("name: x\nnodes:\n  a:\n    interfaces: {e0: {addresses: [198.19.0.1/24]}}\n  r:\n    forwarding: true\n    interfaces: {e0: {addresses: [198.19.0.2/24]}}\nlinks:\n  - endpoints: [a:e0, r:e0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddControl(bad, spec.BaseVariant, "control", 2); err == nil || !strings.Contains(err.Error(), "would match the lab's own packets") {
		t.Errorf("a lab in the benchmarking range: %v", err)
	}
}

// TestExpectedChange: a cost figure rises by the added cost over A's; the
// rate of routers that are the limit falls to A's cost over the new one.
func TestExpectedChange(t *testing.T) {
	if got := ExpectedChange("router_ns_per_packet", 1000, 250); got != 25 {
		t.Errorf("cost: %g", got)
	}
	if got := ExpectedChange("pps", 1000, 250); math.Abs(got+20) > 1e-9 {
		t.Errorf("rate: %g", got)
	}
	if got := ExpectedChange("latency_p50_ns", 1000, 250); got != 0 {
		t.Errorf("no expectation for latency: %g", got)
	}
}
