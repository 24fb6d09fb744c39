package bench

import (
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
)

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

// TestStatusLineOfARun: the status line of a long run says what each
// measured run found, losses counted against what was sent (a run that
// received duplicates shows a negative loss rather than wrapping).
func TestStatusLineOfARun(t *testing.T) {
	var got []string
	b := &Bench{opts: Options{Status: func(s string) { got = append(got, s) }}}
	b.status(&report.Report{Traffic: "ab", Variant: "rps2", Frame: 64, PPS: 250000, Sent: 1000, Received: 990})
	b.status(&report.Report{Traffic: "ab", Frame: 64, Sent: 1000, Received: 1001})
	b.status(nil)
	want := []string{"last run: ab, variant rps2, 64-byte frames: 250000 pps received, 1.00% of the sent lost",
		"last run: ab, 64-byte frames: 0 pps received, -0.10% of the sent lost"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("status lines %q, want %q", got, want)
	}
}
