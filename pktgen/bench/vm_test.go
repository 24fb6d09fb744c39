//go:build vmtest

package bench

import (
	"context"
	"testing"
	"time"
)

// TestVMBenchWithPktgen: the same exact accounting, hop by hop against
// the test's own counter reads, with the kernel engine on a kernel that has
// pktgen.
func TestVMBenchWithPktgen(t *testing.T) {
	l := deployCRS(t)
	if rep := accountsExactly(t, l, "pktgen", 30000, nil); rep.Engine != "kernel pktgen" {
		t.Errorf("engine %s", rep.Engine)
	}
}

// TestVMBenchTopRateAccounts: at pktgen's top rate with two threads every
// packet is accounted for. (On veth the receive softirq runs in the
// sender's context, so the path keeps up and this run shows no loss; the
// lossy case is TestPrivilegedLossIsNamed.)
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
