//go:build !vmtest

package bench

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedFlowsSpread: the router's receive work steered by RPS to
// two CPUs; 64 flows (one source port each) hash to both, so softnet
// shows each CPU processing between 30% and 70% of the packets; one flow
// hashes to one CPU, which takes nearly all (the rest: the few packets
// of the machine's own, such as ARP, within 2%).
func TestPrivilegedFlowsSpread(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	online, err := host.Machine{}.OnlineCPUs()
	if err != nil || len(online) < 2 {
		t.Skipf("needs 2 CPUs: %v %v", online, err)
	}
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "  ns2:\n    forwarding: true\n", "  ns2:\n    forwarding: true\n    cpus: ["+itoa(online[0])+", "+itoa(online[1])+"]\n", 1)
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("b")))
	r := labdeploy.Open(t, l)
	for _, flows := range []int{64, 1} {
		tr := *r.Lab.TrafficRun("forward")
		tr.Duration, tr.Count, tr.RatePPS, tr.Engine, tr.Flows = 0, 40000, 40000, "userspace", flows
		if flows > 1 {
			tr.SrcPorts = [2]int{spec.FlowPortBase, spec.FlowPortBase + flows - 1}
		}
		b, err := New(r, &tr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := b.Run(context.Background(), 64)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		shares := processedShares(rep, online[:2])
		t.Logf("flows %d: received %d of %d; softnet processed on cpu%d, cpu%d: %.1f%%, %.1f%%", flows, rep.Received, rep.Sent, online[0], online[1], 100*shares[0], 100*shares[1])
		if flows > 1 && (shares[0] < 0.3 || shares[0] > 0.7) {
			t.Errorf("%d flows: cpu%d took %.1f%% of the router's packets, want 30%%..70%%", flows, online[0], 100*shares[0])
		}
		if flows == 1 && shares[0] > 0.02 && shares[0] < 0.98 {
			t.Errorf("one flow: spread %.1f%% / %.1f%%, want one CPU to take them all", 100*shares[0], 100*shares[1])
		}
	}
}

// processedShares is each of cpus' share of the packets softnet processed
// in a run (machine-wide: the router's, and the receiver's after it on
// the same CPU, as the router's egress hands them over there).
func processedShares(rep *report.Report, cpus []int) []float64 {
	var total uint64
	per := make([]uint64, len(cpus))
	for _, s := range rep.Softnet {
		for i, c := range cpus {
			if s.CPU == c {
				per[i] += s.Processed
				total += s.Processed
			}
		}
	}
	out := make([]float64, len(cpus))
	for i := range per {
		if total > 0 {
			out[i] = float64(per[i]) / float64(total)
		}
	}
	return out
}
