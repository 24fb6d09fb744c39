//go:build vmtest

package bench

import (
	"context"
	"testing"
	"time"
)

// TestVMBenchWithPktgen: the same accounting with the kernel engine on a
// kernel that has pktgen.
func TestVMBenchWithPktgen(t *testing.T) {
	l := deployCRS(t)
	tr := *l.TrafficRun("forward")
	tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 20000, 30000, "pktgen"
	rep, err := Run(context.Background(), l, &tr, 64, Options{Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: sent %d received %d, %.0f pps", rep.Engine, rep.Sent, rep.Received, rep.PPS)
	if rep.Engine != "kernel pktgen" || rep.Sent != 20000 || rep.Received != 20000 || rep.Unaccount != 0 {
		t.Fatalf("report: engine %s sent %d received %d unaccounted %d", rep.Engine, rep.Sent, rep.Received, rep.Unaccount)
	}
}
