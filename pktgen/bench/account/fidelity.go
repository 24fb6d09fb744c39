package account

import (
	"fmt"
	"math"
	"time"

	"github.com/nslab/nslab/internal/units"
	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// Impairment fidelity: for each impaired interface on the path, what the
// file asked of it against what it delivered in the run, from that
// interface's own counters (its qdisc's drops, what it took and sent on,
// the copies it made) and, for delay, from the latency the receiver read
// when the impairment is the only delay on the path.

// zBounds is how many standard deviations the bounds of a share lie from
// the share asked: 3.29, a 99.9% two-sided binomial interval.
const zBounds = 3.29

// Fidelity fills rep.Fidelity from the run's counters and readings. The
// impairments asked are the kernel's (qdiscs), with the loss bursts of
// the file (file gives an interface's impairment in it): the kernel's
// read-back holds a bursty loss's mean, not its runs.
func Fidelity(rep *report.Report, qdiscs map[string]*qdisc.State, frame float64, file func(target string) *spec.Impair) {
	rep.Fidelity = nil
	delays := 0
	for _, q := range qdiscs {
		if q.Impair != nil && (q.Impair.Delay > 0 || q.Impair.Jitter > 0) {
			delays++
		}
	}
	for i, h := range rep.Hops {
		q := qdiscs[h.String()]
		if q == nil || q.Impair == nil || !IsOut(h.Role) {
			continue
		}
		m := WithBurst(q.Impair, file(h.String()))
		f := report.LinkFidelity{Interface: h.String(), Asked: q.Kind + " " + m.String(), Checks: checksOf(rep, i, m, frame, delays == 1)}
		f.Flag = flagOf(f.Checks)
		rep.Fidelity = append(rep.Fidelity, f)
	}
}

// checksOf are the checks of impairment m of hop i; onlyDelay says it is
// the only delay on the path (the receiver's latency is then its own).
func checksOf(rep *report.Report, i int, m *spec.Impair, frame float64, onlyDelay bool) []report.FidelityCheck {
	var out []report.FidelityCheck
	h := rep.Hops[i]
	copies := copiesOf(rep, h.String())
	took := h.TxPackets + h.QdiscDrops + h.QdiscQueued - copies
	if m.Loss > 0 && m.Rate == 0 && took > 0 {
		out = append(out, lossCheck(m, h.QdiscDrops, took))
	}
	if m.Duplicate > 0 && took > 0 {
		out = append(out, shareCheck("duplicates", m.Duplicate, 1, copies, took))
	}
	if m.Rate > 0 && rep.Elapsed > 0 {
		_, queued, _ := queueDepth(rep, i)
		out = append(out, rateCheck(m, h, took, frame, rep.Elapsed, max(rep.Elapsed, rep.ReceiveWindow), queued))
	}
	if l, _ := pathLatency(rep); (m.Delay > 0 || m.Jitter > 0) && onlyDelay && l != nil && l.Samples > 0 {
		out = append(out, delayCheck(m, rep))
	}
	if s := rep.Sequence; m.Reorder > 0 && s != nil && s.UniqueReceived > 0 {
		out = append(out, report.FidelityCheck{What: "reordering", Asked: units.FormatPercent(m.Reorder) + " sent at once", OK: true,
			Delivered: fmt.Sprintf("%.3f%% arrived after a later packet (%d of %d; whether one sent at once overtakes depends on the spacing against the delay)",
				100*float64(s.Reordered)/float64(s.UniqueReceived), s.Reordered, s.UniqueReceived)})
	}
	return out
}

// flagOf says the first check that failed, or could not be made.
func flagOf(checks []report.FidelityCheck) string {
	for _, c := range checks {
		switch {
		case c.OK:
		case c.Untested:
			return fmt.Sprintf("its %s of %s was not tested: the sender could not offer it; delivered %s", c.What, c.Asked, c.Delivered)
		default:
			return fmt.Sprintf("did not do what the file says: asked %s %s, delivered %s", c.What, c.Asked, c.Delivered)
		}
	}
	return ""
}

// WithBurst is the kernel's impairment k with the loss bursts of the
// file's f, when f's loss is k's (the kernel's read-back has the mean of
// a bursty loss, not its runs).
func WithBurst(k, f *spec.Impair) *spec.Impair {
	m := *k
	if f != nil && f.LossBurst > 0 && f.Loss == m.Loss {
		m.LossBurst = f.LossBurst
	}
	return &m
}

// copiesOf is the copies the impairment of target made (netem duplicate).
func copiesOf(rep *report.Report, target string) uint64 {
	for _, a := range rep.Added {
		if a.Place == "impairment of "+target {
			return a.Packets
		}
	}
	return 0
}

// lossCheck: the qdisc's drops against the loss asked, within the
// binomial bounds (widened for loss in bursts: runs of mean b vary like
// 2b-1 independent losses).
func lossCheck(m *spec.Impair, drops, took uint64) report.FidelityCheck {
	widen := 1.0
	asked := units.FormatPercent(m.Loss)
	if m.LossBurst > 0 {
		widen = math.Sqrt(2*m.LossBurst - 1)
		asked += fmt.Sprintf(" in runs of %g", m.LossBurst)
	}
	c := shareCheck("loss", m.Loss, widen, drops, took)
	c.Asked = asked
	return c
}

// shareCheck sets count of n against pct percent, within zBounds
// standard deviations (times widen).
func shareCheck(what string, pct, widen float64, count, n uint64) report.FidelityCheck {
	p := pct / 100
	sd := math.Sqrt(p*(1-p)/float64(n)) * widen
	lo, hi := max(0, p-zBounds*sd), min(1, p+zBounds*sd)
	got := float64(count) / float64(n)
	return report.FidelityCheck{What: what, Asked: units.FormatPercent(pct), OK: got >= lo && got <= hi,
		Delivered: fmt.Sprintf("%.3f%% (%d of %d; 99.9%% bounds %.3f..%.3f%%)", 100*got, count, n, 100*lo, 100*hi)}
}

// backloggedQueue is the mean queue, in packets, that shows a shaper was
// offered more than its rate: offered less, its queue is empty but for a
// packet now and then.
const backloggedQueue = 5

// rateCheck: a shaper delivers its rate only when offered more; offered
// less, the sender could not offer it, and that is flagged. What it
// offered is what it took while the engine sent (its packets at the run's
// frame size), at least what it sent on: its tx bytes over the receiver's
// window (its queue drains after the sender stops). A shaper other runs
// of a group fill, or a TCP run's GSO packets, take more than the frame
// size says; what it sent on shows it was offered that much, and a queue
// that held packets on average (queued, from the samples) that it was
// offered more than its rate.
func rateCheck(m *spec.Impair, h report.HopCounters, took uint64, frame float64, elapsed, window time.Duration, queued float64) report.FidelityCheck {
	bytes := frame - 4 // what a qdisc counts: the frame without its FCS
	sent := float64(h.TxBytes) * 8 / window.Seconds()
	offered := max(float64(took)*bytes*8/elapsed.Seconds(), sent)
	c := report.FidelityCheck{What: "rate", Asked: units.FormatBitRate(m.Rate),
		Delivered: fmt.Sprintf("%.2f Mbit/s, %.1f%% of it (offered %.2f Mbit/s)", sent/1e6, 100*sent/float64(m.Rate), offered/1e6)}
	backlogged := queued >= backloggedQueue
	if backlogged && offered < float64(m.Rate) {
		c.Delivered = fmt.Sprintf("%.2f Mbit/s, %.1f%% of it (offered more: its queue held %.0f packets on average)", sent/1e6, 100*sent/float64(m.Rate), queued)
	}
	switch {
	case offered < float64(m.Rate) && !backlogged:
		c.Untested = true
	case sent > 1.05*float64(m.Rate):
		c.Delivered += ": more than the rate"
	default:
		c.OK = true
	}
	return c
}

// pathLatency is the one-way latency of the path without the run's own
// queueing where there is one: a TCP run's probe alone, before the flows
// (from says so); else the run's latency (--latency).
func pathLatency(rep *report.Report) (l *receive.Latency, from string) {
	if t := rep.TCP; t != nil && t.Latency != nil {
		return t.Latency.Idle, " of the latency probe alone, before the flows"
	}
	return rep.Latency, ""
}

// delayCheck: the receiver's one-way latency against the delay asked,
// when this impairment is the only delay on the path. The median must
// lie within the jitter's half and 2 ms (or a tenth) above the delay (the
// rest of the path adds a little); a miss names the CPU stalls of the
// run, which delay packets on a virtual machine.
func delayCheck(m *spec.Impair, rep *report.Report) report.FidelityCheck {
	l, from := pathLatency(rep)
	d := func(ns int64) string { return time.Duration(ns).Round(10 * time.Microsecond).String() }
	asked := spec.FormatDelay(m.Delay)
	if m.Jitter > 0 {
		asked += " ± " + spec.FormatDelay(m.Jitter)
	}
	lo := m.Delay - m.Jitter/2
	hi := m.Delay + m.Jitter/2 + max(2*time.Millisecond, m.Delay/10)
	c := report.FidelityCheck{What: "delay", Asked: asked, OK: time.Duration(l.P50Ns) >= lo && time.Duration(l.P50Ns) <= hi,
		Delivered: fmt.Sprintf("p50 %s (min %s, p99 %s, max %s; %d samples%s)", d(l.P50Ns), d(l.MinNs), d(l.P99Ns), d(l.MaxNs), l.Samples, from)}
	if !c.OK && rep.Stalls != nil && rep.Stalls.Stalls > 0 {
		c.Delivered += fmt.Sprintf(": the host stalled %d times (%s in all)", rep.Stalls.Stalls, rep.Stalls.TotalNs.Round(time.Microsecond))
	}
	return c
}
