package search

import (
	"math"
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
)

// TestB2BCorrection: a burst of 2000 frames at 400000 frames/s lasts 5
// ms; a path forwarding 40000 frames/s passes 200 of them meanwhile, so
// it held 1800, which at the burst's rate is 4.5 ms.
func TestB2BCorrection(t *testing.T) {
	bb := &report.BackToBack{RatePPS: 400000, MeanFrames: 2000}
	b2bCorrection(bb, 40000)
	if math.Abs(bb.ImpliedBufferTimeS-0.005) > 1e-12 || math.Abs(bb.BufferedFrames-1800) > 1e-9 || math.Abs(bb.CorrectedBufferTimeS-0.0045) > 1e-12 {
		t.Errorf("%+v", *bb)
	}
}

// TestWriteRFC2544: both layouts give each benchmark's section and
// figures, the skipped back-to-back says why.
func TestWriteRFC2544(t *testing.T) {
	rs := []*report.RFC2544Result{{Lab: "l", Traffic: "t", Frame: 64, Engine: "userspace", TopRatePPS: 400000,
		Throughput: report.RFC2544Throughput{PPS: 123456, Method: "NDR lower bound"},
		Latency:    &report.Report{PPS: 123000, Latency: &receive.Latency{Samples: 10, P50Ns: 1500, P99Ns: 2500, MaxNs: 9000}},
		FrameLoss:  []report.FrameLossStep{{PercentOfTop: 100, OfferedPPS: 400000, LossPct: 61.25, Report: &report.Report{Sent: 1000, Received: 387}}},
		BackToBack: &report.BackToBack{RatePPS: 400000, Skipped: "no loss at the top rate"}}}
	for _, f := range []string{"table", "markdown"} {
		var out strings.Builder
		if err := report.WriteRFC2544(&out, f, rs); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"26.1 Throughput", "123456", "26.2 Latency", "1.5 µs", "26.3 Frame loss rate", "61.250", "26.4 Back-to-back", "skipped: no loss at the top rate"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s lacks %q:\n%s", f, want, out.String())
			}
		}
		if f == "markdown" && !strings.Contains(out.String(), "| 64 | 123456 |") {
			t.Errorf("markdown rows:\n%s", out.String())
		}
	}
}
