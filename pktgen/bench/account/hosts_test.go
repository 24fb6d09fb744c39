package account

import (
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/walk"
)

// onHost is hop on a host, a VXLAN end of a link between hosts when
// vxlan (its rx counts what it then drops).
func onHost(role, node, iface, host string, c sample.Counters, vxlan bool) report.HopCounters {
	return report.HopCounters{Target: sample.Target{Node: node, Interface: iface, Host: host}, Role: role, Counters: c, RxIncludesDropped: vxlan}
}

// TestAcrossHosts: the counters of TestPrivilegedFleetBenchAcrossHosts at
// overload (client on host a, router on host b, server on host c, every
// link a VXLAN between two hosts). The router's ingress counted in rx the
// 43341 packets it then dropped, so the router entered 372147 (its IP MIB
// forwarded as many); what left the router's egress and never reached the
// server was lost on the underlay from host b to host c; the books
// balance, each drop names its host, and the router on host b is the
// bottleneck. Counted as a veth (rx without the drops), the router would
// have lost the ingress's drops a second time inside, and the books
// would not balance.
func TestAcrossHosts(t *testing.T) {
	res := &engine.Result{Sent: 415488}
	hops := []report.HopCounters{
		onHost("sender", "client", "eth0", "a", sample.Counters{TxPackets: 415488}, true),
		onHost("ingress", "router", "eth0", "b", sample.Counters{RxPackets: 415488, RxDropped: 43341}, true),
		onHost("egress", "router", "eth1", "b", sample.Counters{TxPackets: 340762, TxDropped: 31385}, true),
		onHost("receiver", "server", "eth0", "c", sample.Counters{RxPackets: 316172}, true),
	}
	path := []walk.Hop{{Node: "client", Out: "eth0"}, {Node: "router", In: "eth0", Out: "eth1"}, {Node: "server", In: "eth0"}}
	r := &report.Report{Hops: hops, Path: path, Result: res, Elapsed: 3e9}
	Balance(r, res, 64)
	RouterCounts(r, RouterState{}, RouterState{}, false)
	Judge(r, Placement{}, 0)
	if r.Unaccount != 0 || r.NamedDrops != 99316 {
		t.Errorf("named drops %d, unaccounted %d; want 99316 and 0: %+v", r.NamedDrops, r.Unaccount, r.Drops)
	}
	want := map[string]struct {
		n    uint64
		host string
	}{
		"at router:eth0": {43341, "b"},
		"at router:eth1": {31385, "b"},
		"underlay from host b to host c (link router:eth1 -> server:eth0)": {24590, ""},
	}
	for _, d := range r.Drops {
		if w, ok := want[d.Place]; !ok || w.n != d.Packets || w.host != d.Host {
			t.Errorf("drop %q %d on host %q, want %+v", d.Place, d.Packets, d.Host, w)
		}
	}
	if len(r.Drops) != len(want) {
		t.Errorf("%d places, want %d: %+v", len(r.Drops), len(want), r.Drops)
	}
	if len(r.Routers) != 1 || r.Routers[0].Entered != 372147 || r.Routers[0].Inside != 0 || r.Routers[0].Host != "b" {
		t.Errorf("router: %+v, want entered 372147, lost inside 0, on host b", r.Routers)
	}
	if !strings.HasPrefix(r.Bottleneck, "router router on host b (74726 of the run's packets") || !strings.HasSuffix(r.Bottleneck, "its CPUs are host b's, not read from here)") {
		t.Errorf("bottleneck %q, want the router on host b, whose CPUs were not read", r.Bottleneck)
	}
	if ExplainDrops(r, 64, nil, nil, Placement{}); r.Drops[0].Cause != "" {
		t.Errorf("a cause %q from host b's softnet_stat, which was not read", r.Drops[0].Cause)
	}
	// With host b's CPUs as its agent read them: the CPU whose backlog
	// overflowed is the evidence, and the cause of the drops at host b's
	// interfaces; with none, the busiest, and not backlog drops.
	for _, c := range []struct {
		softnet     []report.SoftnetCPU
		want, cause string
	}{
		{[]report.SoftnetCPU{{CPU: 0}, {CPU: 1, Dropped: 74726}}, "; on host b: cpu1 97% softirq, 74726 backlog drops)",
			"a full backlog (host b's softnet_stat: 74726 on cpu1, as many as its interfaces)"},
		{[]report.SoftnetCPU{{CPU: 0}, {CPU: 1, Dropped: 43341}}, "; on host b: cpu1 97% softirq, 43341 backlog drops)",
			"host b's softnet_stat counted 43341 backlog drops in the run (43341 on cpu1), its interfaces 74726"},
		// A few more than the interfaces dropped: softnet_stat counts
		// every namespace's packets; the cause stays.
		{[]report.SoftnetCPU{{CPU: 0}, {CPU: 1, Dropped: 74731}}, "; on host b: cpu1 97% softirq, 74731 backlog drops)",
			"a full backlog (host b's softnet_stat: 74731 on cpu1; its interfaces 74726)"},
		{[]report.SoftnetCPU{{CPU: 0}, {CPU: 1}}, "; on host b: no backlog drops, the busiest cpu1 97% softirq)",
			"not backlog drops (host b's softnet_stat counted none)"},
	} {
		r.OtherHosts = []report.HostUse{{Host: "b", Softnet: c.softnet,
			CPU: []report.CPUUse{{CPU: "cpu0", N: 0, Idle: 90, System: 10}, {CPU: "cpu1", N: 1, SoftIRQ: 97, System: 3}}}}
		Judge(r, Placement{}, 0)
		if !strings.HasSuffix(r.Bottleneck, c.want) || strings.Contains(r.Bottleneck, "not read from here") {
			t.Errorf("bottleneck %q, want it to end %q", r.Bottleneck, c.want)
		}
		if ExplainDrops(r, 64, nil, nil, Placement{}); r.Drops[0].Cause != c.cause || r.Drops[1].Cause != c.cause {
			t.Errorf("causes %q, %q; want %q", r.Drops[0].Cause, r.Drops[1].Cause, c.cause)
		}
	}
}

// TestControlFramesCountedOnTheirHost: the counters of a bench across
// three Kubernetes nodes (examples/kubernetes-ospf.yaml) in which an OSPF
// hello left r1:eth1 on host a after host a's reading and reached r2:eth0
// on host b before host b's: r1's tx counts 3 hellos, r2's rx and tap 4.
// Each host's tx less its own count of the control frames it sent (3) is
// the run's; taking the peer's count (4) from r1's tx made r1 lose a
// packet inside that the server received, and the books did not balance.
func TestControlFramesCountedOnTheirHost(t *testing.T) {
	res := &engine.Result{Sent: 20000}
	hops := []report.HopCounters{
		onHost("sender", "client", "eth0", "a", sample.Counters{TxPackets: 20000, RxPackets: 1}, false),
		onHost("ingress", "r1", "eth0", "a", sample.Counters{RxPackets: 20000, TxPackets: 1}, false),
		onHost("egress", "r1", "eth1", "a", sample.Counters{RxPackets: 3, TxPackets: 20003}, true),
		onHost("ingress", "r2", "eth0", "b", sample.Counters{RxPackets: 20004, TxPackets: 3}, true),
		onHost("egress", "r2", "eth1", "b", sample.Counters{RxPackets: 4, TxPackets: 20004}, true),
		onHost("ingress", "r3", "eth0", "c", sample.Counters{RxPackets: 20004, TxPackets: 4}, true),
		onHost("egress", "r3", "eth1", "c", sample.Counters{TxPackets: 20001}, false),
		onHost("receiver", "server", "eth0", "c", sample.Counters{RxPackets: 20001}, false),
	}
	hops[2].SentControl, hops[3].Neighbour = 3, 4
	hops[4].SentControl, hops[5].Neighbour = 4, 4
	hops[7].Neighbour = 1
	path := []walk.Hop{{Node: "client", Out: "eth0"}, {Node: "r1", In: "eth0", Out: "eth1"}, {Node: "r2", In: "eth0", Out: "eth1"},
		{Node: "r3", In: "eth0", Out: "eth1"}, {Node: "server", In: "eth0"}}
	r := &report.Report{Hops: hops, Path: path, Result: res, Elapsed: 2e9}
	Balance(r, res, 64)
	RouterCounts(r, RouterState{}, RouterState{}, false)
	if r.Sent != 20000 || r.Received != 20000 || r.NamedDrops != 0 || r.Unaccount != 0 {
		t.Errorf("sent %d, received %d, named drops %d, unaccounted %d: %+v", r.Sent, r.Received, r.NamedDrops, r.Unaccount, r.Drops)
	}
	for _, rc := range r.Routers {
		if rc.Entered != 20000 || rc.Forwarded != 20000 || rc.Inside != 0 {
			t.Errorf("router %s: entered %d, forwarded %d, lost inside %d; want 20000, 20000, 0", rc.Node, rc.Entered, rc.Forwarded, rc.Inside)
		}
	}
}
