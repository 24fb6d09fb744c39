package bench

import (
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/spec"
)

// ruleCost is examples/rule-cost.yaml with a traffic run at full load.
func ruleCost(t *testing.T) *spec.Lab {
	t.Helper()
	l, err := spec.ReadFile("../../examples/rule-cost.yaml")
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
