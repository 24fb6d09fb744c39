// Package tcp is what a bench makes of a TCP run's measurements: the
// data segments and acks each counter dropped, the run's figures from
// TCP_INFO of both ends, its latency probe, its verdict, and its live
// line. The bench's runner (package bench) runs the flows and reads the
// counters.
package tcp

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/tcpflow"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// ProbeRate is how many frames a second a TCP run's latency probe sends
// (64-byte frames: about 50 kbit/s, a hundredth of a 5 Mbit/s link).
const ProbeRate = 100

// Engine names the engine of a TCP run in reports.
const Engine = "tcp (nslab's sender and sink, TCP_INFO of both ends)"

// LiveLine prints, after each TCP_INFO sample, the flows' goodput over
// the interval (bytes acknowledged), their retransmissions in it, and
// each flow's cwnd and smoothed RTT now.
func LiveLine(w io.Writer) func([]tcpflow.Flow) {
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

// Frame is the mean frame of the flows' data segments, with its
// headers (Ethernet, IP, TCP with timestamps) and the FCS a frame size
// counts: what an impairment's rate check takes a packet to be.
func Frame(t *report.TCPRun, v6 bool) float64 {
	hdr := 70.0
	if v6 {
		hdr = 90
	}
	if t.Losses.RecvSegments == 0 {
		return hdr
	}
	return float64(t.Total.Received)/float64(t.Losses.RecvSegments) + hdr
}

// Run puts the flows' figures and the losses together.
func Run(res *tcpflow.Result, hops []report.HopCounters, qdiscs map[string]*qdisc.State, softnet []report.SoftnetCPU) *report.TCPRun {
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
	t.Losses.Drops, t.Losses.AckDrops = Drops(hops, qdiscs, softnet)
	t.Losses.SplitBy = segmentsAt(t.Losses.Drops, t.Losses.Lost)
	t.Losses.Unexplained = t.Losses.Lost
	for _, d := range t.Losses.Drops {
		t.Losses.Unexplained -= int64(d.Segments)
	}
	return t
}

// Drops are the drops the path's counters name, split by direction:
// data (sender to receiver: the egress qdiscs of the sender and the
// routers, and each link's drops that way) and acknowledgements (the
// ingress interfaces' own qdiscs, and each link's drops the other way).
// A veth link counts a drop at both of its ends (tx_dropped of the one,
// rx_dropped of the other: the same packets), so a link's drops one way
// are the larger of the two. A drop because a CPU's receive backlog was
// full is one of those, and named as their cause.
func Drops(h []report.HopCounters, qdiscs map[string]*qdisc.State, softnet []report.SoftnetCPU) (data, acks []report.Drop) {
	backlog := backlogCause(softnet)
	for i, x := range h {
		if x.QdiscDrops > 0 {
			q := qdiscs[x.String()]
			d := report.Drop{Place: fmt.Sprintf("%s's %s", x.String(), q.Kind), Packets: x.QdiscDrops, Node: x.Node,
				Counted: "the qdisc's drop counter (the flows' packets and the latency probe's): " + account.QdiscCounts(x), Cause: "its queue: " + q.String()}
			if account.IsOut(x.Role) {
				data = append(data, d)
			} else {
				acks = append(acks, d)
			}
		}
		if i+1 >= len(h) || !account.IsOut(x.Role) || !account.IsIn(h[i+1].Role) {
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

// ReasonCounts is how much each of the sender's retransmission reason
// counters grew over the run (only those that did).
func ReasonCounts(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for _, k := range report.TCPReasonCounters {
		if d := after[k] - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Judge sets a TCP run's verdict: the place that dropped the most
// data segments; else a shaper whose rate the flows filled; else what
// held the senders back, from their TCP_INFO (the receiver's window or
// the send buffer), else the senders' CPUs.
func Judge(r *report.Report, p account.Placement) {
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
func heldBack(r *report.Report, p account.Placement) report.Verdict {
	var busy, rwnd, sndbuf time.Duration
	for _, f := range r.TCP.Flows {
		busy, rwnd, sndbuf = busy+f.Sender.Busy, rwnd+f.Sender.RwndLimited, sndbuf+f.Sender.SndbufLimited
	}
	share := func(d time.Duration) float64 { return 100 * d.Seconds() / max(busy.Seconds(), 1e-9) }
	if busy > 0 && share(rwnd) >= 50 {
		return report.Verdict{Limit: "receiver", Node: r.Path[len(r.Path)-1].Node, Evidence: []string{fmt.Sprintf("its receive window held the senders back %.0f%% of the time they had data", share(rwnd)), "no segment dropped"}}
	}
	var ev []string
	for _, c := range account.SenderCPUs(r, p) {
		ev = append(ev, account.CPUEvidence(r, c))
	}
	if busy > 0 && share(sndbuf) >= 50 {
		ev = append(ev, fmt.Sprintf("the send buffer held the flows back %.0f%% of the time they had data", share(sndbuf)))
	}
	return report.Verdict{Limit: "sender", Node: r.Path[0].Node, CPUs: account.SenderCPUs(r, p), Evidence: append(ev, "no segment dropped")}
}

// SinkBusyPoll is the napi: busy_poll of receiver's interface that holds
// the run's destination address (0: none given).
func SinkBusyPoll(receiver *spec.Node, to netip.Addr) time.Duration {
	for _, i := range receiver.Interfaces {
		for _, a := range i.Addresses {
			if a.Addr() == to && i.NAPI != nil && i.NAPI.BusyPoll != nil {
				return *i.NAPI.BusyPoll
			}
		}
	}
	return 0
}

// Latency puts the probe's two readings together.
func Latency(idle, loaded *receive.Latency, idleSeq, loadedSeq *receive.Sequence) *report.TCPLatency {
	l := &report.TCPLatency{RatePPS: ProbeRate, Idle: idle, Loaded: loaded, IdleLost: idleSeq.Lost, LoadedLost: loadedSeq.Lost,
		LoadedReceived: loadedSeq.UniqueReceived}
	if idle.Samples > 0 && loaded.Samples > 0 && idle.P50Ns > 0 && idle.P99Ns > 0 {
		l.RatioP50 = float64(loaded.P50Ns) / float64(idle.P50Ns)
		l.RatioP99 = float64(loaded.P99Ns) / float64(idle.P99Ns)
	}
	return l
}
