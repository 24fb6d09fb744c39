package report

import (
	"strings"
	"testing"
)

// TestCPUCostThreaded: a run whose router polled in napi kthreads gives no
// CPU cost per packet, says why, and offers no such figure to compare;
// one in softirq gives it.
func TestCPUCostThreaded(t *testing.T) {
	for _, c := range []struct {
		note, want string
		figure     bool
	}{
		{"", "CPU cost: 500 ns a packet forwarded", true},
		{"the receive work of r1 runs in napi kthreads", "CPU cost: none: the receive work of r1 runs in napi kthreads", false},
	} {
		r := &Report{Cost: &RouterCost{Nodes: []string{"r1"}, CPUs: []int{1}, Placed: true, CPUSoftirqNs: 500000, Forwarded: 1000, CPUNote: c.note}}
		if c.note == "" {
			r.Cost.CPUNsPerPacket = 500
		}
		var b strings.Builder
		r.costLines(&errWriter{w: &b})
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("note %q: %q, want %q", c.note, b.String(), c.want)
		}
		if _, ok := runFigures(r)["cpu_ns_per_packet"]; ok != c.figure {
			t.Errorf("note %q: cpu_ns_per_packet among the figures: %v, want %v", c.note, ok, c.figure)
		}
	}
}
