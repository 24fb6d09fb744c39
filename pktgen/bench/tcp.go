package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/tcpflow"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// A TCP run (a traffic run with tcp:) is measured like a UDP one, the
// interfaces of the path sampled and the host read before and after, but
// its engine is TCP itself: tcpflow's connections from the sender's node
// to a sink in the receiver's. There is no balance of packets sent and
// received (TCP sends again what was lost); instead the segments the
// senders retransmitted are set against the drops the path counted.

// tcpEngine names the engine of a TCP run in reports.
const tcpEngine = "tcp (nslab's sender and sink, TCP_INFO of both ends)"

// measureTCP is one measured run of the bench's TCP flows.
func (b *Bench) measureTCP(ctx context.Context) (*report.Report, error) {
	if len(b.opts.Events) > 0 || b.opts.Latency || b.opts.Gate != nil {
		return nil, errors.New("a TCP run (tcp:) is measured without events, latency or a duet")
	}
	defer b.place.confine(b.allowed)()
	m, err := b.idleTCP(ctx)
	if err != nil {
		return nil, err
	}
	defer m.pr.close()
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	return m.end(m.flows(ctx))
}

// tcpMeasure is a TCP run in its phases: idle (the sender's counters and
// the probe alone), begun (the samplers and the probe under load going),
// the flows, and the end (everything read, the report made). A group runs
// the phases of its TCP runs beside its UDP runs' engines.
type tcpMeasure struct {
	b                *Bench
	sender, receiver *ns.NS
	kBefore          map[string]uint64
	pr               *probe
	idle             *receive.Latency
	idleSeq          *receive.Sequence
	st               *running
	loading          *started
}

// idleTCP reads the sender's retransmission counters and measures the
// probe alone, nothing else running. The caller closes m.pr.
func (b *Bench) idleTCP(ctx context.Context) (*tcpMeasure, error) {
	m := &tcpMeasure{b: b, sender: b.run.Node(b.t.From.Node).NS, receiver: b.run.Node(b.path.Hops[len(b.path.Hops)-1].Node).NS}
	var err error
	if m.kBefore, err = kstat.TCPCounters(m.sender); err != nil {
		return nil, err
	}
	if m.pr, err = b.newProbe(); err != nil {
		return nil, err
	}
	if m.idle, m.idleSeq, err = m.pr.idle(ctx); err != nil {
		m.pr.close()
		return nil, err
	}
	return m, nil
}

// begin reads the counters at the start and starts the samplers and the
// probe under load.
func (m *tcpMeasure) begin(ctx context.Context) error {
	var err error
	if m.st, err = m.b.start(m.b.t, 0); err != nil {
		return err
	}
	if m.loading, err = m.pr.start(ctx, m.b.t.Duration); err != nil {
		m.stop()
		return err
	}
	return nil
}

// stop stops the samplers of a run that cannot go on.
func (m *tcpMeasure) stop() {
	m.st.stop()
	m.st.stopWatch()
}

// flows runs the TCP flows (from the sender's namespace to a sink in the
// receiver's), noting when they started and ended.
func (m *tcpMeasure) flows(ctx context.Context) (*tcpflow.Result, error) {
	t := m.b.t
	m.st.start = time.Now()
	job := tcpflow.Job{Sender: m.sender, Receiver: m.receiver, Dst: t.To, Flows: t.TCP.Flows, CC: t.TCP.CC, Duration: t.Duration, Interval: m.b.opts.Interval,
		BusyPoll: sinkBusyPoll(m.b.run.Lab.Node(m.b.path.Hops[len(m.b.path.Hops)-1].Node), t.To)}
	if m.b.opts.Live != nil {
		job.OnSample = tcpLiveLine(m.b.opts.Live)
	}
	res, err := tcpflow.Run(ctx, job)
	m.st.end = time.Now()
	return res, err
}

// tcpLiveLine prints, after each TCP_INFO sample, the flows' goodput over
// the interval (bytes acknowledged), their retransmissions in it, and
// each flow's cwnd and smoothed RTT now.
func tcpLiveLine(w io.Writer) func([]tcpflow.Flow) {
	var last time.Duration
	return func(flows []tcpflow.Flow) {
		var acked uint64
		var retrans uint32
		var at time.Duration
		var cwnd, srtt []string
		for _, f := range flows {
			n := len(f.Points)
			if n == 0 {
				continue
			}
			p, prev := f.Points[n-1], tcpflow.Point{}
			if n > 1 {
				prev = f.Points[n-2]
			}
			acked, retrans, at = acked+p.Acked-prev.Acked, retrans+p.Retrans-prev.Retrans, p.At
			cwnd, srtt = append(cwnd, fmt.Sprint(p.Cwnd)), append(srtt, p.SRTT.Round(100*time.Microsecond).String())
		}
		if at <= last {
			return
		}
		fmt.Fprintf(w, "  tcp, %.1fs into the flows: goodput %.2f Mbit/s  retransmitted %d  cwnd %s  srtt %s\n", at.Seconds(),
			float64(acked)*8/(at-last).Seconds()/1e6, retrans, strings.Join(cwnd, "/"), strings.Join(srtt, "/"))
		last = at
	}
}

// end waits for the path to settle, reads the probe, the counters and the
// host, and makes the report.
func (m *tcpMeasure) end(res *tcpflow.Result, runErr error) (*report.Report, error) {
	b := m.b
	settle(b.meas.sampler, b.remote())
	loaded, loadedSeq, perr := m.loading.finish()
	m.st.stopWatch()
	after, err := snapshot(b.meas.routers, &b.cost)
	m.st.samples = m.st.stop()
	if runErr != nil || err != nil || perr != nil {
		return nil, errors.Join(runErr, err, perr)
	}
	kAfter, err := kstat.TCPCounters(m.sender)
	if err != nil {
		return nil, err
	}
	final, neighbours, err := b.meas.final()
	if err != nil {
		return nil, err
	}
	rep := b.tcpReport(res, m.st, final, neighbours, after)
	rep.TCP.Losses.Kernel = reasonCounts(m.kBefore, kAfter)
	rep.TCP.Latency = tcpLatency(m.idle, loaded, m.idleSeq, loadedSeq)
	fidelity(rep, b.meas.qdiscs, tcpFrame(rep.TCP, b.t.To.Is6()), b.fileImpair) // the delay from the probe's idle latency
	judgeTCP(rep, b.place)
	return rep, nil
}

// tcpReport makes a TCP run's report from its readings: the path and
// its hops' counters, the CPUs, and the flows with their losses.
func (b *Bench) tcpReport(res *tcpflow.Result, st *running, final sample.Sample, neighbours []control, after hostState) *report.Report {
	t := b.t
	rep := &report.Report{Lab: b.run.Lab.Name, Traffic: t.Name, Variant: b.opts.Variant, Block: b.opts.Block, From: t.From.String(), To: t.To.String(),
		Engine: tcpEngine, Elapsed: res.Elapsed, Path: b.path.Hops, NextHop: b.path.NextHop.String(), NextHopMAC: b.path.SenderMAC().String(),
		Differences: differenceWords(b.path.Differences), Targets: b.meas.targets, HopRoles: b.meas.roles, Samples: append(st.samples, final),
		Shapers: b.meas.shaperRates(), Env: b.env, Started: st.start, Ended: st.end}
	rep.Hops = hopCounters(b.meas, st.base, final, neighbours)
	routerCounts(rep, st.before, after, t.To.Is6())
	rep.CPU = report.CPUUses(st.before.cpu, after.cpu)
	b.place.label(rep.CPU)
	rep.Softnet = report.SoftnetUses(st.before.softnet, after.softnet)
	rep.TCP = tcpRun(res, rep.Hops, b.meas.qdiscs, rep.Softnet)
	return rep
}

// tcpFrame is the mean frame of the flows' data segments, with its
// headers (Ethernet, IP, TCP with timestamps) and the FCS a frame size
// counts: what an impairment's rate check takes a packet to be.
func tcpFrame(t *report.TCPRun, v6 bool) float64 {
	hdr := 70.0
	if v6 {
		hdr = 90
	}
	if t.Losses.RecvSegments == 0 {
		return hdr
	}
	return float64(t.Total.Received)/float64(t.Losses.RecvSegments) + hdr
}

// tcpRun puts the flows' figures and the losses together.
func tcpRun(res *tcpflow.Result, hops []report.HopCounters, qdiscs map[string]*qdisc.State, softnet []report.SoftnetCPU) *report.TCPRun {
	t := &report.TCPRun{CC: res.CC, Duration: res.Duration, Elapsed: res.Elapsed, Drained: res.Drained, BusyPoll: res.BusyPoll}
	var srtt time.Duration
	for _, f := range res.Flows {
		tf := report.TCPFlow{Port: f.Port, Received: f.Received, Retrans: f.Sender.TotalRetrans, SRTT: f.Sender.SRTT, MinRTT: f.Sender.MinRTT,
			Points: f.Points, Sender: &f.Sender, Receiver: &f.Receiver}
		if f.Last > 0 {
			tf.GoodputMbps = float64(f.Received) * 8 / f.Last.Seconds() / 1e6
		}
		t.Flows = append(t.Flows, tf)
		t.Total.Received += f.Received
		t.Total.Retrans += f.Sender.TotalRetrans
		srtt += f.Sender.SRTT
		if t.Total.MinRTT == 0 || f.Sender.MinRTT < t.Total.MinRTT {
			t.Total.MinRTT = f.Sender.MinRTT
		}
	}
	if n := len(res.Flows); n > 0 {
		t.Total.SRTT = (srtt / time.Duration(n)).Round(time.Microsecond)
	}
	if res.Elapsed > 0 {
		t.Total.GoodputMbps = float64(t.Total.Received) * 8 / res.Elapsed.Seconds() / 1e6
	}
	for _, f := range res.Flows {
		t.Losses.SentSegments += uint64(f.Sender.DataSegsOut)
		t.Losses.RecvSegments += uint64(f.Receiver.DataSegsIn)
	}
	t.Losses.Retransmitted = uint64(t.Total.Retrans)
	t.Losses.Lost = int64(t.Losses.SentSegments) - int64(t.Losses.RecvSegments)
	t.Losses.Spurious = int64(t.Losses.Retransmitted) - t.Losses.Lost
	t.Losses.Drops, t.Losses.AckDrops = tcpDrops(hops, qdiscs, softnet)
	t.Losses.SplitBy = segmentsAt(t.Losses.Drops, t.Losses.Lost)
	t.Losses.Unexplained = t.Losses.Lost
	for _, d := range t.Losses.Drops {
		t.Losses.Unexplained -= int64(d.Segments)
	}
	return t
}

// tcpDrops are the drops the path's counters name, split by direction:
// data (sender to receiver: the egress qdiscs of the sender and the
// routers, and each link's drops that way) and acknowledgements (the
// ingress interfaces' own qdiscs, and each link's drops the other way).
// A veth link counts a drop at both of its ends (tx_dropped of the one,
// rx_dropped of the other: the same packets), so a link's drops one way
// are the larger of the two. A drop because a CPU's receive backlog was
// full is one of those, and named as their cause.
func tcpDrops(h []report.HopCounters, qdiscs map[string]*qdisc.State, softnet []report.SoftnetCPU) (data, acks []report.Drop) {
	backlog := backlogCause(softnet)
	for i, x := range h {
		if x.QdiscDrops > 0 {
			q := qdiscs[x.String()]
			d := report.Drop{Place: fmt.Sprintf("%s's %s", x.String(), q.Kind), Packets: x.QdiscDrops, Node: x.Node,
				Counted: "the qdisc's drop counter (the flows' packets and the latency probe's): " + qdiscCounts(x), Cause: "its queue: " + q.String()}
			if isOut(x.Role) {
				data = append(data, d)
			} else {
				acks = append(acks, d)
			}
		}
		if i+1 >= len(h) || !isOut(x.Role) || !isIn(h[i+1].Role) {
			continue
		}
		y := h[i+1]
		place := fmt.Sprintf("link %s -> %s", x.String(), y.String())
		if n := max(x.TxDropped, y.RxDropped+y.RxMissed); n > 0 {
			data = append(data, report.Drop{Place: place, Packets: n, Node: y.Node, Counted: "tx_dropped of the one end, rx_dropped of the other", Cause: backlog})
		}
		if n := max(y.TxDropped, x.RxDropped+x.RxMissed); n > 0 {
			acks = append(acks, report.Drop{Place: place + " (back)", Packets: n, Node: x.Node, Counted: "tx_dropped of the one end, rx_dropped of the other", Cause: backlog})
		}
	}
	slices.SortStableFunc(data, func(a, b report.Drop) int { return int(b.Packets) - int(a.Packets) })
	return data, acks
}

// segmentsAt gives the lost segments to the places that dropped data:
// all to one place; between several, in proportion to the packets each
// dropped (the counters count GSO packets once, whatever they hold), and
// says so. No place at all: the segments stay unexplained.
func segmentsAt(drops []report.Drop, lost int64) (splitBy string) {
	if len(drops) == 0 || lost <= 0 {
		return ""
	}
	if len(drops) == 1 {
		drops[0].Segments = uint64(lost)
		return ""
	}
	var packets uint64
	for _, d := range drops {
		packets += d.Packets
	}
	left := uint64(lost)
	for i := range drops {
		drops[i].Segments = uint64(lost) * drops[i].Packets / packets
		left -= drops[i].Segments
	}
	drops[0].Segments += left // the rounding, to the place that dropped the most
	return "split between the places by the packets each dropped: a packet may be a GSO packet of several segments"
}

// backlogCause names the CPUs whose receive backlog overflowed in the run
// ("" when none did).
func backlogCause(softnet []report.SoftnetCPU) string {
	var s string
	for _, c := range softnet {
		if c.Dropped > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%d at cpu%d's backlog", c.Dropped, c.CPU)
		}
	}
	if s == "" {
		return ""
	}
	return "receive backlogs full: " + s
}

// reasonCounts is how much each of the sender's retransmission reason
// counters grew over the run (only those that did).
func reasonCounts(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for _, k := range report.TCPReasonCounters {
		if d := after[k] - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// judgeTCP sets a TCP run's verdict: the place that dropped the most
// data segments; else a shaper whose rate the flows filled; else what
// held the senders back, from their TCP_INFO (the receiver's window or
// the send buffer), else the senders' CPUs.
func judgeTCP(r *report.Report, p placement) {
	t := r.TCP
	var v report.Verdict
	switch {
	case len(t.Losses.Drops) > 0:
		d := t.Losses.Drops[0]
		v = report.Verdict{Limit: "link", Node: d.Place, Evidence: []string{fmt.Sprintf("%d segments lost there in %d packets (%s)", d.Segments, d.Packets, d.Cause)}}
		for _, x := range r.Targets {
			if strings.HasPrefix(d.Place, x.String()+"'s ") && r.Shapers[x.String()] > 0 {
				v.Limit, v.Node = "shaper", x.String() // its queue overflowed at its rate
			}
		}
	case shaperFilled(r) != "":
		v = report.Verdict{Limit: "shaper", Node: shaperFilled(r), Evidence: []string{fmt.Sprintf("%s: goodput %.2f Mbit/s", r.Env.Impairments[shaperFilled(r)], t.Total.GoodputMbps), "no segment dropped"}}
	default:
		v = heldBack(r, p)
	}
	r.Verdict = v
	r.Bottleneck = v.Line()
}

// shaperFilled is the path interface whose shaper the flows' goodput
// filled to 90% or more of its rate (payload against a rate of frames:
// full segments carry 1448 of 1514 bytes), "" when none.
func shaperFilled(r *report.Report) string {
	for _, t := range r.Targets {
		if rate := r.Shapers[t.String()]; rate > 0 && r.TCP.Total.GoodputMbps*1e6*1514/1448 >= 0.9*float64(rate) {
			return t.String()
		}
	}
	return ""
}

// heldBack: nothing dropped and no shaper filled. The senders' TCP_INFO
// says how long the receiver's window and the send buffer held them back.
func heldBack(r *report.Report, p placement) report.Verdict {
	var busy, rwnd, sndbuf time.Duration
	for _, f := range r.TCP.Flows {
		busy, rwnd, sndbuf = busy+f.Sender.Busy, rwnd+f.Sender.RwndLimited, sndbuf+f.Sender.SndbufLimited
	}
	share := func(d time.Duration) float64 { return 100 * d.Seconds() / max(busy.Seconds(), 1e-9) }
	if busy > 0 && share(rwnd) >= 50 {
		return report.Verdict{Limit: "receiver", Node: r.Path[len(r.Path)-1].Node, Evidence: []string{fmt.Sprintf("its receive window held the senders back %.0f%% of the time they had data", share(rwnd)), "no segment dropped"}}
	}
	var ev []string
	for _, c := range senderCPUs(r, p) {
		ev = append(ev, cpuEvidence(r, c))
	}
	if busy > 0 && share(sndbuf) >= 50 {
		ev = append(ev, fmt.Sprintf("the send buffer held the flows back %.0f%% of the time they had data", share(sndbuf)))
	}
	return report.Verdict{Limit: "sender", Node: r.Path[0].Node, CPUs: senderCPUs(r, p), Evidence: append(ev, "no segment dropped")}
}

// sinkBusyPoll is the napi: busy_poll of receiver's interface that holds
// the run's destination address (0: none given).
func sinkBusyPoll(receiver *spec.Node, to netip.Addr) time.Duration {
	for _, i := range receiver.Interfaces {
		for _, a := range i.Addresses {
			if a.Addr() == to && i.NAPI != nil && i.NAPI.BusyPoll != nil {
				return *i.NAPI.BusyPoll
			}
		}
	}
	return 0
}
