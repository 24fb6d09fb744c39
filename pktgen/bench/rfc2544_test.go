//go:build !vmtest

// The RFC 2544 test times the host's own kernel: the VM leaves it out.

package bench

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/bench/search"
	"github.com/nslab/nslab/pktgen/mlr"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedRFC2544ThroughTBF: RFC 2544's four benchmarks of
// 1518-byte frames through a router whose egress a tbf shapes to 20
// Mbit/s (a bucket of 10 ms at the rate, 25000 bytes, and a queue of 50
// full frames, 75700 bytes; tbf counts a frame as its 1514 bytes without
// FCS). What each must find follows from the qdisc:
//   - throughput: 20e6 / (1514 x 8) = 1651 frames/s; a 0.5 s trial a
//     little above it loses nothing while bucket and queue take the
//     excess (66 frames, 8% of such a trial), so 80%..115% of it;
//   - frame loss at the top rate R: what the rate limit cannot pass,
//     1 - 1651/R, within 5 points;
//   - back-to-back: of the longest whole burst, the frames held once
//     RFC 9004's correction takes off those the shaper passed during it
//     are the bucket and the queue, (25000 + 75700) / 1514 = 66.5, within
//     25%;
//   - latency at the throughput: at most the drain time of bucket and
//     queue, 40 ms, with a scheduling allowance of 20 ms.
//
// (With 64-byte frames the unplaced lab's sender cannot overflow the
// shaper: its CPU also runs the shaper's timer-driven dequeue, one
// packet at a time, and gets only the time that leaves.)
func TestPrivilegedRFC2544ThroughTBF(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "veth2: {addresses: [10.0.2.254/24]}", "veth2: {addresses: [10.0.2.254/24], impair: {rate: 20Mbit, limit: 50}}", 1)
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("b")))
	b := newBench(t, labdeploy.Open(t, l), func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.RatePPS, tr.RateMbps, tr.Engine = time.Second, 0, 0, 0, "userspace"
	}, Options{Interval: 100 * time.Millisecond})
	goal := mlr.Goal{Name: "NDR", LossRatio: 0, ExceedRatio: 0.5, FinalTrial: 500 * time.Millisecond, DurationSum: 1500 * time.Millisecond, Width: 0.02, InitialTrial: 100 * time.Millisecond}
	res, err := b.RFC2544(context.Background(), 1518, search.RFC2544Options{MLR: search.MLROptions{Goals: []mlr.Goal{goal}}, B2BTrials: 2, B2BLongest: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const shaped, held = 20e6 / (1514 * 8), (25000.0 + 75700) / 1514
	var out strings.Builder
	if err := report.WriteRFC2544(&out, "table", []*report.RFC2544Result{res}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s(in %v)", out.String(), res.Duration)
	t.Logf("goals %+v", res.Throughput.Search.Goals)
	if tp := res.Throughput.PPS; tp < 0.8*shaped || tp > 1.15*shaped {
		t.Errorf("throughput %.0f pps, want %.0f (the shaped rate) -20%%..+15%%", tp, shaped)
	}
	top := res.FrameLoss[0]
	sentRate := float64(top.Report.Sent) / top.Report.Elapsed.Seconds()
	// premise: the loss wanted comes from the rate the sender reached, so
	// a slower sender lowers the loss and the loss wanted alike.
	if want := 100 * (1 - shaped/sentRate); top.PercentOfTop != 100 || math.Abs(top.LossPct-want) > 5 {
		t.Errorf("frame loss at the top rate (%.0f pps sent) %.2f%%, want %.2f%% within 5 points", sentRate, top.LossPct, want)
	}
	if n := len(res.FrameLoss); n < 2 || res.FrameLoss[n-1].PercentOfTop < 10 {
		t.Errorf("frame loss steps %d", n)
	}
	bb := res.BackToBack
	if bb == nil || bb.Skipped != "" || len(bb.Searches) != 2 || bb.BufferedFrames < 0.75*held || bb.BufferedFrames > 1.25*held {
		t.Fatalf("back-to-back %+v, want %.0f frames held within 25%%", bb, held)
	}
	if lat := res.Latency.Latency; lat == nil || lat.Samples == 0 || time.Duration(lat.MaxNs) > 60*time.Millisecond {
		t.Errorf("latency at the throughput: %+v", lat)
	}
}
