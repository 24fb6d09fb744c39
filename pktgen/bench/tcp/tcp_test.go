package tcp

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/tcpflow"
	"github.com/nslab/nslab/topology/qdisc"
)

// TestTCPDrops: drops are split by direction (an egress's qdisc and a
// link's drops toward the receiver are data; an ingress's qdisc and a
// link's drops back are acknowledgements), a veth link's drops counted at
// both ends are counted once, and lost segments are split between several
// places by their packets.
func TestTCPDrops(t *testing.T) {
	tg := func(node, ifc string) sample.Target { return sample.Target{Node: node, Interface: ifc} }
	hops := []report.HopCounters{
		{Target: tg("a", "e0"), Role: "sender", Counters: sample.Counters{TxDropped: 30, RxDropped: 2}},
		{Target: tg("r", "i0"), Role: "ingress", Counters: sample.Counters{RxDropped: 30, QdiscDrops: 4}},
		{Target: tg("r", "e1"), Role: "egress", Counters: sample.Counters{QdiscDrops: 10}},
		{Target: tg("b", "i1"), Role: "receiver"},
	}
	qd := map[string]*qdisc.State{"r:i0": {Kind: "tbf"}, "r:e1": {Kind: "tbf"}}
	data, acks := Drops(hops, qd, []report.SoftnetCPU{{CPU: 1, Dropped: 30}})
	if len(data) != 2 || data[0].Place != "link a:e0 -> r:i0" || data[0].Packets != 30 || !strings.Contains(data[0].Cause, "30 at cpu1's backlog") ||
		data[1].Place != "r:e1's tbf" || data[1].Packets != 10 {
		t.Errorf("data drops %+v", data)
	}
	if len(acks) != 2 || acks[0].Place != "link a:e0 -> r:i0 (back)" || acks[0].Packets != 2 || acks[1].Place != "r:i0's tbf" {
		t.Errorf("acknowledgement drops %+v", acks)
	}
	if by := segmentsAt(data, 81); by == "" || data[0].Segments+data[1].Segments != 81 || data[1].Segments != 20 {
		t.Errorf("81 segments split %d and %d (%q)", data[0].Segments, data[1].Segments, by)
	}
}

// TestTCPLiveLine: a live line gives the flows' goodput over the last
// interval (their acknowledged bytes' growth), the retransmissions in it
// and each flow's cwnd; a sample no flow has yet prints nothing.
func TestTCPLiveLine(t *testing.T) {
	var out bytes.Buffer
	line := LiveLine(&out)
	p := func(at time.Duration, acked uint64, retrans, cwnd uint32) tcpflow.Point {
		return tcpflow.Point{At: at, Acked: acked, Retrans: retrans, Cwnd: cwnd, SRTT: time.Millisecond}
	}
	line([]tcpflow.Flow{{}, {}})
	flows := []tcpflow.Flow{{Points: []tcpflow.Point{p(time.Second, 500000, 1, 10)}}, {Points: []tcpflow.Point{p(time.Second, 750000, 0, 12)}}}
	line(flows)
	flows[0].Points = append(flows[0].Points, p(2*time.Second, 1000000, 4, 20))
	flows[1].Points = append(flows[1].Points, p(2*time.Second, 1000000, 0, 22))
	line(flows)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "1.0s into the flows: goodput 10.00 Mbit/s  retransmitted 1  cwnd 10/12") ||
		!strings.Contains(lines[1], "2.0s into the flows: goodput 6.00 Mbit/s  retransmitted 3  cwnd 20/22") {
		t.Errorf("live lines:\n%s", out.String())
	}
}
