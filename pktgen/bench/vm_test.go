//go:build vmtest

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/spec"
)

// TestVMBenchWithPktgen: the same exact accounting, hop by hop against
// the test's own counter reads, with the kernel engine on a kernel that has
// pktgen.
func TestVMBenchWithPktgen(t *testing.T) {
	_, r := deployCRS(t)
	b := newBench(t, r, func(tr *spec.Traffic) { tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 30000, 30000, "pktgen" }, Options{})
	rep := ownReadsAgree(t, b, r)
	if rep.Engine != "kernel pktgen" || rep.Sent != 30000 || rep.Received != 30000 || rep.Unaccount != 0 {
		t.Errorf("engine %s: sent %d received %d unaccounted %d", rep.Engine, rep.Sent, rep.Received, rep.Unaccount)
	}
}

// TestVMRouterLimitedPktgen: the router-limited case with kernel pktgen.
// pktgen's thread is kpktgend_N on CPU N: the run's cpus pick it. The
// router's receive work is on the other CPU; at pktgen's top rate the
// router drops, and every drop is named, with the verdict on the router
// and every hop number the test's own. The emulated CPUs race each other
// (CI57: pktgen sent 120 kpps and the router kept up), so the router's
// backlog is made small, as for the userspace sender (overloadable).
func TestVMRouterLimitedPktgen(t *testing.T) {
	r, sender, router := placedCRS(t)
	overloadable(t)
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.RatePPS, tr.Engine, tr.CPUs = 2*time.Second, 0, 0, "pktgen", spec.CPUSet{sender}
	}, Options{Interval: 200 * time.Millisecond})
	rep := ownReadsAgree(t, b, r)
	if rep.Engine != "kernel pktgen" || rep.Result.Threads[0].Name != "veth1@"+itoa(sender) {
		t.Errorf("engine %s, threads %+v", rep.Engine, rep.Result.Threads)
	}
	if rep.Loss <= 0 || rep.Unaccount != 0 || rep.SenderCheck.Difference != 0 {
		t.Fatalf("loss %d, unaccounted %d, sender check %+v: want loss, balanced", rep.Loss, rep.Unaccount, rep.SenderCheck)
	}
	if rep.Verdict.Limit != "router" || rep.Verdict.Node != "ns2" || !strings.Contains(rep.Bottleneck, "backlog drops on cpu"+itoa(router)) {
		t.Errorf("verdict %+v (%s)", rep.Verdict, rep.Bottleneck)
	}
}
