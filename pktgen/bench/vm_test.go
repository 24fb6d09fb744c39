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

// TestVMBenchOverloadAccounts: at pktgen's top rate with two threads every
// packet is accounted for. (On veth the receive softirq runs in the
// sender's context, so even a backlog of 4 did not overflow here: this run
// shows no loss, and accounting under real loss remains untested.)
func TestVMBenchTopRateAccounts(t *testing.T) {
	l := deployCRS(t)
	tr := *l.TrafficRun("forward")
	tr.Duration, tr.Count, tr.RatePPS, tr.Engine, tr.Threads = time.Second, 0, 0, "pktgen", 2
	rep, err := Run(context.Background(), l, &tr, 64, Options{Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d received %d loss %d (%.2f%%) = named %d + unaccounted %d", rep.Sent, rep.Received, rep.Loss, rep.LossPct, rep.NamedDrops, rep.Unaccount)
	for _, h := range rep.Hops {
		t.Logf("  %s %s rx %d tx %d rx_dropped %d tx_dropped %d", h.Role, h.Target, h.RxPackets, h.TxPackets, h.RxDropped, h.TxDropped)
	}
	if rep.Unaccount != 0 {
		t.Errorf("%d packets lost without a counter that names the drop", rep.Unaccount)
	}
}
