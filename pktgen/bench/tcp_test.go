package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedTCPRetransmissionsTraced: one cubic flow through a router
// whose egress is shaped to 10 Mbit/s with a queue of 20 packets. Every
// segment the flow retransmitted is accounted for: lost at that tbf (the
// only place that drops data) or named as spurious, the identity holding
// exactly whatever the count, in the table and in JSON; the verdict names
// the shaper.
//
// The test's premise is that the flow overflows the queue. With 100
// packets (121 ms) it did so 3 or 4 times in 4 s here, and not at all on
// a new machine whose cubic window stayed under the queue: 20 packets
// (24 ms) are overflowed by the first slow start's window and again at
// every cubic cycle. A run that lost nothing is reported as the premise
// failing, not as the identity passing.
func TestPrivilegedTCPRetransmissionsTraced(t *testing.T) {
	labtest.CoveredOnHost(t) // the userspace engine (or TCP): the same path as here
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "veth2: {addresses: [10.0.2.254/24]}", "veth2: {addresses: [10.0.2.254/24], impair: {rate: 10Mbit, limit: 20}}", 1)
	if src == string(data) {
		t.Fatal("the example changed: fix the edit")
	}
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("b")))
	r := labdeploy.Open(t, l)
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.TCP = 4*time.Second, 0, &spec.TCP{Flows: 1, CC: "cubic"}
	}, Options{Interval: 500 * time.Millisecond})
	rep, err := b.Run(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	ls := rep.TCP.Losses
	t.Logf("%s; %s", ls.Line(), rep.Bottleneck)
	var atTbf int64
	for _, d := range ls.Drops {
		if d.Place != "ns2:veth2's tbf" {
			t.Errorf("data lost at %s (%d segments): only ns2:veth2's tbf drops in this lab", d.Place, d.Segments)
		}
		atTbf += int64(d.Segments)
	}
	if ls.Lost+ls.Spurious != int64(ls.Retransmitted) || ls.Unexplained != 0 || atTbf != ls.Lost {
		t.Errorf("retransmitted %d = lost %d + spurious %d, %d of them at the tbf, unexplained %d: the identity does not hold", ls.Retransmitted, ls.Lost, ls.Spurious, atTbf, ls.Unexplained)
	}
	if ls.Lost == 0 || len(ls.Drops) != 1 {
		t.Fatalf("premise failed: the flow was to overflow the tbf's queue of 20 packets, and %d segments were lost at %d places (retransmitted %d, data segments sent %d); the identity above was checked, the drops' accounting was not", ls.Lost, len(ls.Drops), ls.Retransmitted, ls.SentSegments)
	}
	if float64(ls.Drops[0].Segments) < 0.99*float64(ls.Retransmitted) && len(ls.Kernel) == 0 {
		t.Errorf("%d of %d retransmitted segments were lost at the tbf, and no counter names the rest", ls.Drops[0].Segments, ls.Retransmitted)
	}
	// The router's forward bytes agree: what entered from the sender less
	// what left towards the receiver is the dropped packets' headers (66
	// bytes each: Ethernet, IPv4, TCP with timestamps) and the lost
	// segments' payload (1 to MSS bytes each: a segment counts as one
	// however full), and the control frames it took and did not forward
	// (an ARP of the run's: 42 bytes; up to 90 for IPv6's).
	in, out := rep.Hops[1], rep.Hops[2]
	p, sg, mss := ls.Drops[0].Packets, ls.Drops[0].Segments, uint64(rep.TCP.Flows[0].Sender.MSS)
	if gone := in.RxBytes - out.TxBytes; gone < p*66+sg || gone > p*66+sg*mss+in.Neighbour*90 {
		t.Errorf("the router took in %d bytes more than it sent on: not %d packets holding %d segments of 1 to %d bytes, and %d control frames", gone, p, sg, mss, in.Neighbour)
	}
	// The flows' segments are the run's packets, not control frames: what
	// the router entered is its ingress's rx but for an ARP or two.
	if rt := rep.Routers; len(rt) != 1 || in.Neighbour > 4 || rt[0].Entered+in.Neighbour != in.RxPackets {
		t.Errorf("router %+v: the ingress received %d, %d of them counted as control frames", rt, in.RxPackets, in.Neighbour)
	}
	if rep.Verdict.Limit != "shaper" || rep.Verdict.Node != "ns2:veth2" {
		t.Errorf("verdict %q, want the shaper ns2:veth2", rep.Bottleneck)
	}
	// A full queue of 20 packets at 10 Mbit/s holds up to 24 ms: the
	// probe waits there under load, and did not idle.
	if l := rep.TCP.Latency; l == nil || l.Idle.Samples < 90 || l.Loaded.Samples < 300 || l.Loaded.P50Ns < int64(time.Millisecond) || l.RatioP50 < 5 {
		t.Errorf("latency under load %+v", l)
	} else {
		t.Logf("latency: %s", l.Line())
	}
	if g := rep.TCP.Total.GoodputMbps; g < 8 || g > 10 {
		t.Errorf("goodput %.2f Mbit/s through a 10 Mbit/s shaper", g)
	}
	var table, js bytes.Buffer
	if err := report.Write(&table, "table", []*report.Report{rep}); err != nil || !strings.Contains(table.String(), "losses: "+ls.Line()) {
		t.Errorf("table (%v) has no losses line:\n%s", err, table.String())
	}
	if err := report.Write(&js, "json", []*report.Report{rep}); err != nil {
		t.Fatal(err)
	}
	var back struct {
		TCP struct {
			Losses struct {
				Retransmitted uint64 `json:"retransmitted"`
				Drops         []struct {
					Place    string `json:"place"`
					Segments uint64 `json:"segments"`
				} `json:"drops"`
			} `json:"losses"`
		} `json:"tcp"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.TCP.Losses.Retransmitted != ls.Retransmitted || len(back.TCP.Losses.Drops) != 1 || back.TCP.Losses.Drops[0].Segments != ls.Drops[0].Segments {
		t.Errorf("JSON (%v): %+v", err, back.TCP.Losses)
	}
}

// TestPrivilegedTCPBesideUDPFlood: a cubic flow and a UDP flood of 8
// Mbit/s from another client cross the router at once, into one 10 Mbit/s
// egress with a 20-packet queue (the flood takes most of it, so the flow
// overflows it: the premise, checked apart). Each run is reported as itself: the flow's
// retransmissions traced to that tbf (its count of packets there says
// other runs' are in it), the flood counted apart by its port; the
// aggregate takes the flow's data segments and probe frames beside the
// flood's packets, and the tbf's drops are all of them, nothing
// unaccounted.
func TestPrivilegedTCPBesideUDPFlood(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	l := labdeploy.Deploy(t, labtest.Rename(twoWays(t), labtest.Name("g")))
	r := labdeploy.Open(t, l)
	if err := r.Impair(spec.Endpoint{Node: "ns2", Interface: "veth2"}, &spec.Impair{Rate: 10e6, Limit: 20}); err != nil {
		t.Fatal(err)
	}
	ts, err := Streams(l, []string{"ab", "cb"}, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	ts[0].TCP, ts[0].Count, ts[0].RatePPS, ts[0].Duration = &spec.TCP{Flows: 1, CC: "cubic"}, 0, 0, 3*time.Second
	// 1000 frames of 1000 bytes a second, 8 Mbit/s: with the flow's share
	// more than the shaper's rate on any machine (the VM's TCP alone does
	// not always fill the queue).
	ts[1].Count, ts[1].RatePPS, ts[1].Duration, ts[1].Frames = 0, 1000, 3*time.Second, []int{1000}
	g, err := NewGroup(r, ts, Options{Interval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	rep, err := g.Run(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	tcp, udp, ag := rep.Streams[0], rep.Streams[1], rep.Aggregate
	ls := tcp.TCP.Losses
	t.Logf("tcp: %s; udp: sent %d received %d; aggregate sent %d received %d drops %+v unaccounted %d; overlap %v",
		ls.Line(), udp.Sent, udp.Received, ag.Sent, ag.Received, ag.Drops, ag.Unaccount, ag.Overlap)
	if ls.Lost == 0 {
		t.Fatalf("premise failed: the flow was to overflow the tbf's queue of 20 packets beside the flood, and lost nothing (%s)", ls.Line())
	}
	if len(ls.Drops) != 1 || ls.Drops[0].Place != "ns2:veth2's tbf" || int64(ls.Drops[0].Segments) != ls.Lost ||
		!strings.Contains(ls.Drops[0].Counted, "other runs cross it") {
		t.Errorf("the flow's losses %+v: want its lost segments at ns2:veth2's tbf, shared with the flood", ls)
	}
	if udp.Loss < 0 || udp.Unaccount != 0 || !strings.Contains(udp.CountedBy, "UDP destination port") { // it may lose none: the flow takes most of the queue
		t.Errorf("the flood: loss %d unaccounted %d counted by %q", udp.Loss, udp.Unaccount, udp.CountedBy)
	}
	if tcp.Sent != ls.SentSegments+tcp.TCP.Latency.LoadedReceived+tcp.TCP.Latency.LoadedLost || ag.Sent != tcp.Sent+udp.Sent || ag.Loss != tcp.Loss+udp.Loss {
		t.Errorf("aggregate sent %d loss %d from the flow's %d/%d and the flood's %d/%d", ag.Sent, ag.Loss, tcp.Sent, tcp.Loss, udp.Sent, udp.Loss)
	}
	var atTbf uint64
	for _, d := range ag.Drops {
		if d.Place == "qdisc of ns2:veth2" {
			atTbf = d.Packets
		}
	}
	if atTbf == 0 || ag.Unaccount != 0 || ag.NamedDrops-atTbf >= uint64(ls.Lost) {
		t.Errorf("aggregate: %d dropped at the tbf, unaccounted %d: %+v", atTbf, ag.Unaccount, ag.Drops)
	}
	if ag.Overlap < 2*time.Second {
		t.Errorf("the runs overlapped %v", ag.Overlap)
	}
	var out strings.Builder
	if err := report.WriteGroups(&out, "table", []*report.GroupReport{rep}); err != nil || !strings.Contains(out.String(), "losses: "+ls.Line()) ||
		!strings.Contains(out.String(), "--- run cb ---") {
		t.Errorf("group table (%v):\n%s", err, out.String())
	}
}

// TestPrivilegedCCVariant: congestion control as a variant: the variant
// sets the sender node's default (net.ipv4.tcp_congestion_control) and a
// run that names none takes it, each report saying the one its sockets
// used; a run that names its own is refused with such a variant, before
// anything is deployed.
func TestPrivilegedCCVariant(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	labtest.CoveredOnHost(t) // reno, cubic and tbf are the host kernel's too
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "veth2: {addresses: [10.0.2.254/24]}", "veth2: {addresses: [10.0.2.254/24], impair: {rate: 20Mbit}}", 1)
	// A new namespace takes the host's default: the variant sets another.
	def, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	base, other := strings.TrimSpace(string(def)), "reno"
	if base == "reno" {
		other = "cubic"
	}
	src += "variants:\n  other:\n    ns1:\n      sysctls: {net.ipv4.tcp_congestion_control: " + other + "}\n"
	l, err := spec.Parse("cc.yaml", labtest.Rename([]byte(src), labtest.Name("c")))
	if err != nil {
		t.Fatal(err)
	}
	tr := *l.TrafficRun("forward")
	tr.Duration, tr.Count, tr.TCP = time.Second, 0, &spec.TCP{Flows: 1, CC: "cubic"}
	m := &lab.Manager{StateDir: t.TempDir()}
	req := Request{Lab: l, Traffic: &tr, Variants: []string{"base", "other"}, Repeat: 2}
	if _, err := Sweep(context.Background(), m, req); err == nil || !strings.Contains(err.Error(), "remove cc: from the run") || m.Store().Deployed(l) {
		t.Fatalf("a run naming cubic with a variant of the default: %v (deployed %v)", err, m.Store().Deployed(l))
	}
	tr.TCP.CC = ""
	t.Cleanup(func() { m.Destroy(l.Name) })
	out, err := Sweep(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range out.Reports {
		got[r.Variant] = r.TCP.CC
	}
	if len(out.Reports) != 4 || got["base"] != base || got["other"] != other {
		t.Errorf("congestion control by variant in %d runs: %v, want base %s (the host's default), other %s", len(out.Reports), got, base, other)
	}
}
