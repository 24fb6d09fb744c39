package bench

import (
	"fmt"
	"maps"
	"strings"

	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/bench/tcp"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/qdisc"
)

// countApart makes stream i's report its own where it shares counters: the
// receiver's count from the port counter, and its drops only at places no
// other stream crosses; what else it lost is put at the shared counters,
// which the aggregate names by place.
func (g *Group) countApart(i int, rep *report.Report) error {
	b := g.benches[i]
	recv := b.meas.targets[len(b.meas.targets)-1].String()
	rep.CountedBy = recv + " rx_packets, less control frames (ARP, IGMP, IPv6 control)"
	rep.Shared = g.shared[i]
	if p := g.ports[i]; p != nil {
		n, err := p.Count()
		if err != nil {
			return fmt.Errorf("stream %s: %w", b.t.Name, err)
		}
		rep.Received = n
		rep.CountedBy = fmt.Sprintf("%s, UDP destination port %d (a packet socket with a kernel filter: the interface receives other streams too)", recv, p.Port)
		rep.Loss = int64(rep.Sent) - int64(rep.Received)
		rep.LossPct = 0
		if rep.Sent > 0 {
			rep.LossPct = 100 * float64(rep.Loss) / float64(rep.Sent)
		}
		rep.Rates()
		rep.SteadyPPS, rep.SteadyL2 = 0, 0 // the receiver's samples carry every stream
	}
	if len(g.shared[i]) == 0 {
		return nil
	}
	var routers []report.RouterCounts // a router's line is its own only where no counter of it is shared
	for _, rt := range rep.Routers {
		if !g.nodeShared(i, rt.Node) {
			routers = append(routers, rt)
		}
	}
	rep.Routers = routers
	own, ownAdded := g.own(i, rep.Drops), g.own(i, rep.Added)
	shared := strings.Join(g.shared[i], ", ")
	switch rest := rep.Loss + int64(account.Total(ownAdded)) - int64(account.Total(own)); {
	case rest > 0:
		own = append(own, report.Drop{Place: "at counters shared with other streams", Packets: uint64(rest), Cause: "the runs' aggregate names them by place",
			Counted: "its loss less the drops at its own counters; " + shared + " carry several streams, and the aggregate names these drops by place"})
	case rest < 0 && g.sharedDuplicates(i, rep.Hops):
		ownAdded = append(ownAdded, report.Drop{Place: "at counters shared with other streams", Packets: uint64(-rest), Cause: "copies an impairment there sent; the runs' aggregate names them by place",
			Counted: "what it received beyond what it sent and the copies at its own counters; " + shared + " carry several streams"})
	}
	rep.Drops, rep.Added = own, ownAdded
	rep.NamedDrops, rep.NamedAdded = account.Total(own), account.Total(ownAdded)
	rep.Unaccount = rep.Loss + int64(rep.NamedAdded) - int64(rep.NamedDrops)
	return nil
}

// own is the places of stream i's report that no other stream shares.
func (g *Group) own(i int, places []report.Drop) []report.Drop {
	var out []report.Drop
	for _, d := range places {
		if !g.touchesShared(i, d) {
			out = append(out, d)
		}
	}
	return out
}

// sharedDuplicates reports whether a hop of stream i that another stream
// shares sends copies (its impairment duplicates).
func (g *Group) sharedDuplicates(i int, hops []report.HopCounters) bool {
	for _, h := range hops {
		if h.Duplicates != "" && g.sharedT[i][h.String()] {
			return true
		}
	}
	return false
}

// touchesShared reports whether a drop of stream i was counted at a
// counter another stream shares.
func (g *Group) touchesShared(i int, d report.Drop) bool {
	shared := g.sharedT[i]
	switch {
	case strings.HasPrefix(d.Place, "link "):
		ends := strings.Split(strings.TrimPrefix(d.Place, "link "), " -> ")
		return len(ends) == 2 && (shared[ends[0]] || shared[ends[1]])
	case strings.HasPrefix(d.Place, "inside "):
		return g.nodeShared(i, d.Node)
	}
	// "qdisc of X", "still queued in the qdisc of X": the interface last
	return shared[d.Place[strings.LastIndex(d.Place, " ")+1:]]
}

// nodeShared reports whether stream i shares a counter of node with
// another stream.
func (g *Group) nodeShared(i int, node string) bool {
	for t := range g.sharedT[i] {
		if strings.HasPrefix(t, node+":") {
			return true
		}
	}
	return false
}

// aggregate adds the streams up and names the drops of every counter on
// their paths once: per link, per qdisc, and inside each node that the
// streams cross (all they brought in, less all they took out).
func (g *Group) aggregate(reps []*report.Report) report.Aggregate {
	var a report.Aggregate
	for i, r := range reps {
		a.Sent += r.Sent
		a.Received += r.Received
		a.PPS += r.PPS
		a.MbpsL2 += r.MbpsL2
		a.Counting = append(a.Counting, g.benches[i].t.Name+": "+r.CountedBy)
	}
	a.Loss = int64(a.Sent) - int64(a.Received)
	if a.Sent > 0 {
		a.LossPct = 100 * float64(a.Loss) / float64(a.Sent)
	}
	a.Drops, a.Added = account.UnionDrops(reps)
	a.NamedDrops, a.NamedAdded = account.Total(a.Drops), account.Total(a.Added)
	if d, ok := account.GSOSegments(reps, a.Loss+int64(a.NamedAdded)-int64(a.NamedDrops)); ok {
		a.Drops = append(a.Drops, d)
		a.NamedDrops += d.Packets
	}
	a.Unaccount = a.Loss + int64(a.NamedAdded) - int64(a.NamedDrops)
	a.Overlap, a.Span = account.Overlap(reps)
	return a
}

// judge says what limited the runs together, from the aggregate's drops
// and the machine's counters, and gives it to every run whose losses
// were at counters it shares (its own counters cannot say).
func (g *Group) judge(frame int, reps []*report.Report, a *report.Aggregate) {
	base := account.FirstUDP(reps)
	if base == nil { // TCP runs alone: each judged itself; the aggregate takes the one that lost the most
		worst := reps[0]
		for _, r := range reps[1:] {
			if r.Loss > worst.Loss {
				worst = r
			}
		}
		a.Bottleneck, a.Verdict = worst.Bottleneck, worst.Verdict
		return
	}
	agg := *base
	agg.Drops, agg.Sent, agg.Received, agg.Loss, agg.NamedDrops, agg.Unaccount = a.Drops, a.Sent, a.Received, a.Loss, a.NamedDrops, a.Unaccount
	agg.Added, agg.NamedAdded = a.Added, a.NamedAdded
	mtu, qdiscs := map[string]int{}, map[string]*qdisc.State{}
	var sentPPS float64
	for _, b := range g.benches {
		maps.Copy(mtu, b.meas.mtu)
		maps.Copy(qdiscs, b.meas.qdiscs)
	}
	for _, r := range reps {
		if r.Elapsed > 0 && r.TCP == nil {
			sentPPS += float64(r.Sent) / r.Elapsed.Seconds()
		}
	}
	place := g.placement()
	account.ExplainDrops(&agg, frame, mtu, qdiscs, place)
	account.Judge(&agg, place, sentPPS)
	if agg.Verdict.Limit == "sender" { // every run's sender, not the first's
		agg.Verdict.Node = strings.Join(account.SenderNodes(reps), ", ")
		agg.Bottleneck = agg.Verdict.Line()
	}
	a.Drops, a.Bottleneck, a.Verdict = agg.Drops, agg.Bottleneck, agg.Verdict
	if r := account.TCPFilled(reps); r != nil && a.Verdict.Limit == "offered rate" { // the UDP runs were carried; the TCP flows found the limit
		a.Verdict, a.Bottleneck = r.Verdict, r.Bottleneck+" (TCP run "+r.Traffic+"; the UDP runs' offered rates were carried)"
	}
	for i, r := range reps {
		if len(g.shared[i]) == 0 || r.TCP != nil { // a TCP run's verdict is its own segments'
			continue
		}
		if r.NamedDrops > 0 && r.Unaccount == 0 {
			r.Verdict, r.Bottleneck = agg.Verdict, agg.Bottleneck+" (all runs measured together: its own counters cannot tell)"
			continue
		}
		b := g.benches[i]
		if r.Elapsed > 0 {
			account.Judge(r, b.place, float64(r.Sent)/r.Elapsed.Seconds())
		}
	}
}

// tcpApart gives a TCP run of a group the figures its row and the
// aggregate count it by, forward: its data segments (the senders'
// data_segs_out, the receiver's data_segs_in) and its latency probe's
// frames (by sequence number). Its drops at counters other runs cross
// carry their packets too, and say so; the segments it lost there are
// its own (TCP_INFO).
func (g *Group) tcpApart(i int, rep *report.Report) {
	t := rep.TCP
	probeSent, probeRecv := uint64(0), uint64(0)
	if l := t.Latency; l != nil {
		probeSent, probeRecv = l.LoadedReceived+l.LoadedLost, l.LoadedReceived
	}
	rep.Sent, rep.Received = t.Losses.SentSegments+probeSent, t.Losses.RecvSegments+probeRecv
	rep.Loss = int64(rep.Sent) - int64(rep.Received)
	rep.LossPct = 0
	if rep.Sent > 0 {
		rep.LossPct = 100 * float64(rep.Loss) / float64(rep.Sent)
	}
	if s := rep.Elapsed.Seconds(); s > 0 {
		rep.PPS = float64(rep.Received) / s
		bytes := tcp.Frame(t, g.benches[i].t.To.Is6())*float64(t.Losses.RecvSegments) + float64(probeRecv*uint64(g.benches[i].probeFrame()))
		rep.MbpsL2 = bytes * 8 / s / 1e6
	}
	rep.SteadyPPS, rep.SteadyL2 = 0, 0
	rep.CountedBy = "its data segments (data_segs_out of the senders, data_segs_in of the receiver, from TCP_INFO) and its latency probe's frames (by sequence number); Mb/s L2 from the bytes received and each segment's headers"
	rep.Shared = g.shared[i]
	for k, d := range t.Losses.Drops {
		if g.touchesShared(i, report.Drop{Place: strings.TrimSuffix(d.Place, "'s "+account.LastWord(d.Place)), Node: d.Node}) {
			t.Losses.Drops[k].Counted += "; other runs cross it too: its packets are theirs as well, the segments this run's"
		}
	}
}
