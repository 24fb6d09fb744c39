package account

import (
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
)

// hop is one hop of the client-router-server path with its counters over
// a run.
func hop(role, node, iface string, c sample.Counters, duplicates string) report.HopCounters {
	return report.HopCounters{Target: sample.Target{Node: node, Interface: iface}, Role: role, Counters: c, Duplicates: duplicates}
}

const dup10 = "netem duplicate 10% limit 1000"

// TestCopiesBalance: packets an impairment duplicates are named as added,
// at the router's egress or at the sender, and the accounting balances;
// without an impairment that duplicates, more arriving than was sent is
// an imbalance the verdict says.
func TestCopiesBalance(t *testing.T) {
	res := &engine.Result{Sent: 20000}
	cases := []struct {
		name                          string
		hops                          []report.HopCounters
		sent, added, drops            uint64
		unaccounted                   int64
		place, verdict, routerOrCheck string
	}{
		{"router's egress duplicates", []report.HopCounters{
			hop("sender", "ns1", "veth1", sample.Counters{TxPackets: 20000}, ""),
			hop("ingress", "ns2", "veth1-peer", sample.Counters{RxPackets: 20000}, ""),
			hop("egress", "ns2", "veth2", sample.Counters{TxPackets: 21989}, dup10),
			hop("receiver", "ns3", "veth2-peer", sample.Counters{RxPackets: 21989}, ""),
		}, 20000, 1989, 0, 0, "impairment of ns2:veth2", "offered rate", "copies its egress added 1989, lost inside 0"},
		{"and the link after it drops", []report.HopCounters{
			hop("sender", "ns1", "veth1", sample.Counters{TxPackets: 20000}, ""),
			hop("ingress", "ns2", "veth1-peer", sample.Counters{RxPackets: 20000}, ""),
			hop("egress", "ns2", "veth2", sample.Counters{TxPackets: 21000, TxDropped: 989}, dup10),
			hop("receiver", "ns3", "veth2-peer", sample.Counters{RxPackets: 21000, RxDropped: 989}, ""),
		}, 20000, 1989, 989, 0, "impairment of ns2:veth2", "ns2:veth2 -> ns3:veth2-peer", "dropped at its egress 989, copies its egress added 1989"},
		{"sender duplicates", []report.HopCounters{
			hop("sender", "ns1", "veth1", sample.Counters{TxPackets: 21979}, dup10),
			hop("ingress", "ns2", "veth1-peer", sample.Counters{RxPackets: 21979}, ""),
			hop("egress", "ns2", "veth2", sample.Counters{TxPackets: 21979}, ""),
			hop("receiver", "ns3", "veth2-peer", sample.Counters{RxPackets: 21979}, ""),
		}, 20000, 1979, 0, 0, "impairment of ns1:veth1", "offered rate", "copies its impairment (" + dup10 + ") sent"},
		{"a switch port duplicates", []report.HopCounters{
			hop("sender", "h1", "eth0", sample.Counters{TxPackets: 20000}, ""),
			hop("switch in", "sw", "p1", sample.Counters{RxPackets: 20000}, ""),
			hop("switch out", "sw", "p2", sample.Counters{TxPackets: 21000}, dup10),
			hop("receiver", "h2", "eth0", sample.Counters{RxPackets: 21000}, ""),
		}, 20000, 1000, 0, 0, "impairment of sw:p2", "offered rate", "sent 20000 + added 1000 = received 21000"},
		{"more arrived, nothing duplicates", []report.HopCounters{
			hop("sender", "ns1", "veth1", sample.Counters{TxPackets: 20000}, ""),
			hop("ingress", "ns2", "veth1-peer", sample.Counters{RxPackets: 20000}, ""),
			hop("egress", "ns2", "veth2", sample.Counters{TxPackets: 21989}, ""),
			hop("receiver", "ns3", "veth2-peer", sample.Counters{RxPackets: 21989}, ""),
		}, 20000, 0, 0, -1989, "", "the receiver counted 1989 packets more", "lost inside -1989"},
	}
	for _, c := range cases {
		r := &report.Report{Hops: c.hops, Path: crsPath, OfferedPPS: 20000, Result: res, Elapsed: 1e9}
		Balance(r, res, 64)
		RouterCounts(r, RouterState{}, RouterState{}, false)
		Judge(r, Placement{}, 20000)
		if r.Sent != c.sent || r.NamedAdded != c.added || r.NamedDrops != c.drops || r.Unaccount != c.unaccounted {
			t.Errorf("%s: sent %d added %d drops %d unaccounted %d, want %d %d %d %d", c.name, r.Sent, r.NamedAdded, r.NamedDrops, r.Unaccount, c.sent, c.added, c.drops, c.unaccounted)
		}
		if int64(r.Sent)+int64(r.NamedAdded) != int64(r.Received)+int64(r.NamedDrops)+r.Unaccount {
			t.Errorf("%s: the balance does not hold", c.name)
		}
		if c.place != "" && (len(r.Added) != 1 || r.Added[0].Place != c.place) {
			t.Errorf("%s: added %+v, want one at %s", c.name, r.Added, c.place)
		}
		var out strings.Builder
		if err := report.Write(&out, "table", []*report.Report{r}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Bottleneck, c.verdict) || !strings.Contains(out.String(), c.routerOrCheck) {
			t.Errorf("%s: bottleneck %q, want %q; the table lacks %q:\n%s", c.name, r.Bottleneck, c.verdict, c.routerOrCheck, out.String())
		}
		if c.added > 0 && !strings.Contains(out.String(), report.BalanceLine(c.sent, c.added, r.Received, c.drops, 0)) {
			t.Errorf("%s: the table's balance line is not %q:\n%s", c.name, report.BalanceLine(c.sent, c.added, r.Received, c.drops, 0), out.String())
		}
	}
}

// TestGroupCopies: two streams through one router whose shared egress
// duplicates; the aggregate counts that egress once and names its copies.
func TestGroupCopies(t *testing.T) {
	egress := hop("egress", "r", "e2", sample.Counters{TxPackets: 2200}, dup10) // both streams' packets and copies
	recv := hop("receiver", "h3", "eth0", sample.Counters{RxPackets: 2200}, "")
	reps := []*report.Report{
		{Hops: []report.HopCounters{hop("sender", "h1", "eth0", sample.Counters{TxPackets: 1000}, ""), hop("ingress", "r", "e0", sample.Counters{RxPackets: 1000}, ""), egress, recv}},
		{Hops: []report.HopCounters{hop("sender", "h2", "eth0", sample.Counters{TxPackets: 1000}, ""), hop("ingress", "r", "e1", sample.Counters{RxPackets: 1000}, ""), egress, recv}},
	}
	drops, added := UnionDrops(reps)
	if len(drops) != 0 || len(added) != 1 || added[0].Place != "impairment of r:e2" || added[0].Packets != 200 {
		t.Errorf("drops %+v, added %+v: want 200 copies at r:e2", drops, added)
	}
}

// TestLinkBacklogCause: the links' drops are a full backlog when this
// host's softnet_stat counted as many backlog drops, or a few more (it
// counts every namespace's packets on those CPUs: the make run report
// counted 551499 for the links' 551494, and lost its cause); fewer, and
// the cause says how many it counted, not that they all were.
func TestLinkBacklogCause(t *testing.T) {
	for _, c := range []struct {
		dropped uint64
		cause   string
	}{
		{551494, "a full backlog (softnet_stat: 551494 on cpu1, as many as the links)"},
		{551499, "a full backlog (softnet_stat: 551499 on cpu1; the links 551494)"},
		{300000, "softnet_stat counted 300000 backlog drops in the run (300000 on cpu1), the links 551494"},
		{0, "not backlog drops (softnet_stat counted none)"},
	} {
		r := &report.Report{
			Softnet: []report.SoftnetCPU{{CPU: 0}, {CPU: 1, Dropped: c.dropped}},
			Drops: []report.Drop{{Place: "link client:eth0 -> r1:eth0", Packets: 308671, Node: "r1"},
				{Place: "link r1:eth1 -> server:eth0", Packets: 242823, Node: "server"}},
		}
		ExplainDrops(r, 64, nil, nil, Placement{})
		for _, d := range r.Drops {
			if d.Cause != c.cause {
				t.Errorf("%d backlog drops: %s: %q, want %q", c.dropped, d.Place, d.Cause, c.cause)
			}
		}
	}
}
