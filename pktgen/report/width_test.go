package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/measured"
	"github.com/nslab/nslab/pktgen/stall"
)

// widthReport is a report with what makes lines long: the engine's
// reason, stalls with losses, the routers' CPU cost over stalls, drops
// whose cause is a full backlog softnet_stat over-counts, the CPUs'
// roles and the machine's settings.
func widthReport() *Report {
	return &Report{
		Lab: "fwd", Traffic: "forward", From: "client:eth0", To: "10.0.2.1", NextHop: "r1:eth0", NextHopMAC: "3a:8e:3a:38:a4:88",
		Engine: "userspace (AF_PACKET)",
		Reason: "kernel pktgen is not available in fwd-client (the kernel was built without it (# CONFIG_NET_PKTGEN is not set); loading the module failed: no pktgen module at /lib/modules/6.18.44-fc-v1272/kernel/net/core/pktgen.ko[.xz|.zst|.gz]), so the userspace engine ran",
		Frame:  64, Elapsed: 5 * time.Second, Bottleneck: "router r1 (cpu1 of router r1: 92% softirq, 551499 backlog drops on cpu1)",
		Stalls: &stall.Summary{CPUs: []int{0, 1}, Stalls: 23, LongestNs: 8280 * time.Microsecond, TotalNs: 66110 * time.Microsecond, ThresholdNs: time.Millisecond},
		Sent:   1598464, Received: 1046970, Loss: 551494, LossPct: 34.5, PPS: 209383, SteadyPPS: 193757,
		Hops:    []HopCounters{{Target: measured.Target{Node: "client", Interface: "eth0"}, Role: "sender"}},
		Routers: []RouterCounts{{Node: "r1", Entered: 1289793, Forwarded: 1046970, DroppedAtEgress: 242823}},
		Drops: []Drop{{Place: "link client:eth0 -> r1:eth0", Packets: 308671,
			Cause: "a full backlog (softnet_stat: 551499 on cpu1; the links 551494)"}},
		NamedDrops: 551494,
		CostNote:   "no router's own cost per packet at full speed: counting each packet would slow the router (give a rate it holds)",
		Cost:       &RouterCost{Nodes: []string{"r1"}, CPUs: []int{1}, Placed: true, CPUSoftirqNs: 4370645000, Runs: 35457, Forwarded: 1046970, CPUNsPerPacket: 4175},
		Softnet:    []SoftnetCPU{{CPU: 1, Processed: 2336783, Dropped: 551499}},
		CPU:        []CPUUse{{CPU: "cpu0", N: 0, User: 11.5, System: 86.1, Idle: 0.4, Roles: []string{"sender client", "nslab sampler"}}},
		Env: Env{Kernel: "6.18.44-fc-v1272 #1 SMP PREEMPT_DYNAMIC @0", CPUModel: "AMD EPYC", CPUs: 2, OnlineCPUs: "0-1", AllowedCPUs: "0-1",
			Placement: []string{"sender client: 1 thread(s) on cpu 0", "node r1: receive work on cpu 1 (rps)"},
			Sysctls:   map[string]string{"net.core.netdev_max_backlog": "1000", "net.core.dev_weight": "64"},
			LabHash:   strings.Repeat("2427084", 10)[:64], NSLab: "nslab 606174b", EngineV: "nslab 606174b"},
	}
}

// TestDefaultReportFitsAScreen: no line of the default report is over
// 120 characters; each long form is in --details, and the stalls are
// stated once.
func TestDefaultReportFitsAScreen(t *testing.T) {
	r := widthReport()
	r.DetailsHint = "--details says why"
	var b bytes.Buffer
	if err := Write(&b, "table", []*Report{r}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if len(l) > 120 {
			t.Errorf("a line of %d characters:\n%s", len(l), l)
		}
	}
	if n := strings.Count(b.String(), "66.11ms"); n != 1 {
		t.Errorf("the stalls' total said %d times, want once:\n%s", n, b.String())
	}
	for _, long := range []string{"CONFIG_NET_PKTGEN", "softnet_stat (machine-wide", "net.core.netdev_max_backlog=1000", "a hard timer's interrupt", "35457 runs"} {
		if strings.Contains(b.String(), long) {
			t.Errorf("the default report has the long form %q", long)
		}
	}
	r.Details = true
	b.Reset()
	if err := Write(&b, "table", []*Report{r}); err != nil {
		t.Fatal(err)
	}
	for _, long := range []string{"CONFIG_NET_PKTGEN", "softnet_stat (machine-wide", "net.core.netdev_max_backlog=1000", "a hard timer's interrupt", "35457 runs", "--details"} {
		if got := strings.Contains(b.String(), long); got != (long != "--details") {
			t.Errorf("--details: %q present %v", long, got)
		}
	}
}
