package bench

import (
	"context"
	"fmt"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"time"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/kernel"
	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
)

// With Options.Latency, a reader in the receiver's namespace reads every
// packet of each measured run (pktgen/receive): one-way latency from the
// stamps both engines write, and the accounting by sequence number.

// latencyMethod names how latency was measured, in reports.
const latencyMethod = "every packet"

// sampleRate is about how many packets a second a sampled reader reads.
const sampleRate = 1000

// readEvery is the reader's sampling of a run of t at frame: every packet
// (1) when nothing on the path is placed; else one in a power of two
// such that about sampleRate a second are read (1024 at the engine's top
// rate): under placement the receiver's stack runs on a placed CPU, and
// copying every packet into the reader's ring would take that CPU's time
// from what the run measures, while the filter's verdict costs little.
// Options.LatencyEvery, when set, decides instead.
func (b *Bench) readEvery(t *spec.Traffic, frame int) uint32 {
	if b.opts.LatencyEvery > 0 {
		return b.opts.LatencyEvery
	}
	if len(b.place.ByNode) == 0 {
		return 1
	}
	pps := offeredPPS(t, frame) * uint64(max(1, t.Threads))
	if pps == 0 {
		return 1024
	}
	every := uint32(1)
	for uint64(every)*2*sampleRate <= pps && every < 1<<20 {
		every *= 2
	}
	return every
}

// methodOf names a reader's sampling in reports.
func methodOf(every uint32) string {
	if every <= 1 {
		return latencyMethod
	}
	return fmt.Sprintf("one packet in %d (sequence number a multiple of %d)", every, every)
}

// openReader starts the receiver's reader of a run of t, on the
// receiver's interface (the last measured one): here, or through its
// host's agent when it is on another host, that host's clock taken less
// its offset against this one's.
func (b *Bench) openReader(t *spec.Traffic, every uint32) (arrivalsReader, error) {
	last := b.meas.targets[len(b.meas.targets)-1]
	_, pktgen := b.eng.(kernel.Engine)
	if k := len(b.meas.targets) - 1; b.meas.isRemote(k) {
		c := b.meas.hops.Clock(last.Host)
		a := remote.ReaderAsk{Node: last.Node, Interface: last.Interface, Port: uint16(t.Flow().Port), IPv6: t.To.Is6(), Nanoseconds: !pktgen, Every: every, ClockOffset: correction(c)}
		if err := b.meas.hops.OpenReader(last.Host, a); err != nil {
			return nil, err
		}
		return hostReader{hops: b.meas.hops, clock: c}, nil
	}
	r, err := b.openLocalReader(t, every)
	if err != nil {
		return nil, err
	}
	return localReader{r}, nil
}

// openLocalReader starts the receiver's reader here.
func (b *Bench) openLocalReader(t *spec.Traffic, every uint32) (*receive.Reader, error) {
	last := b.meas.targets[len(b.meas.targets)-1]
	link, err := b.run.Link(spec.Endpoint{Node: last.Node, Interface: last.Interface})
	if err != nil {
		return nil, fmt.Errorf("the receiver's interface %s: %w", last, err)
	}
	_, pktgen := b.eng.(kernel.Engine)
	return receive.Open(b.run.Node(last.Node).NS, receive.Options{
		Ifindex: link.Attrs().Index, Port: uint16(t.Flow().Port), IPv6: t.To.Is6(), Nanoseconds: !pktgen, Every: every,
	})
}

// arrivalsReader is the receiver's reader of a run, here or on the
// receiver's host: stop ends it, once the packets still on their way had
// linger to arrive, and says what it made of the packets, as q asks.
type arrivalsReader interface {
	stop(linger time.Duration, q remote.ArrivalsAsk) (remote.Arrivals, error)
}

type localReader struct{ r *receive.Reader }

func (l localReader) stop(linger time.Duration, q remote.ArrivalsAsk) (remote.Arrivals, error) {
	res, err := l.r.Stop(context.Background(), linger)
	if err != nil {
		return remote.Arrivals{}, err
	}
	return remote.ArrivalsOf(res, q), nil
}

// hostReader is the reader on the receiver's host, whose clock is taken
// to be clock's offset from this one's.
type hostReader struct {
	hops  *remote.Hops
	clock report.HostClock
}

func (h hostReader) stop(linger time.Duration, q remote.ArrivalsAsk) (remote.Arrivals, error) {
	q.Linger = linger
	// How the clock was measured (h.clock.By) is the report's host_clocks.
	q.Method += fmt.Sprintf("; read on host %s, clock %+.3f ± %.3f ms from the sender's", h.clock.Host, float64(h.clock.Offset)/1e6, float64(h.clock.Error)/1e6)
	if correction(h.clock) == 0 {
		q.Method += ": the same within that, so no correction"
	} else {
		q.Method += ": arrivals taken less that offset"
	}
	return h.hops.StopReader(h.clock.Host, q)
}

// correction is what a receiver's arrival times are taken less: the
// receiver's clock's offset against the sender's when it is larger than
// the error of its measure, else none (both may be one clock).
func correction(c report.HostClock) time.Duration {
	if c.Offset > c.Error || -c.Offset > c.Error {
		return c.Offset
	}
	return 0
}

// stampResolution is the send stamp's resolution of the bench's engine.
func (b *Bench) stampResolution() int64 {
	if _, pktgen := b.eng.(kernel.Engine); pktgen {
		return 1000 // pktgen_hdr's tv_usec
	}
	return 1
}

// readerResult stops the reader of a run (the path has settled) and puts
// what it read in the report: latency, and the accounting by sequence
// when it read every packet and one thread sent (threads number their
// packets alike, so the reader could not tell them apart).
func (b *Bench) readerResult(r arrivalsReader, every uint32, res *engine.Result, rep *report.Report) error {
	q := remote.ArrivalsAsk{Method: methodOf(every), ResolutionNs: b.stampResolution(), Sizes: rep.Mix != "" && every <= 1,
		Sequence: every <= 1 && len(res.Threads) <= 1, FirstSeq: engine.FirstSeq, Sent: res.Handed()}
	got, err := r.stop(0, q)
	if err != nil {
		return err
	}
	rep.Latency = got.Latency
	rep.ReaderMissed = got.Missed
	if every > 1 {
		rep.SequenceNote = "no accounting by sequence: the reader read " + methodOf(every)
		return nil
	}
	rep.ReceivedSizes = got.Sizes
	if n := len(res.Threads); n > 1 {
		rep.SequenceNote = fmt.Sprintf("no accounting by sequence: %d sender threads number their packets alike", n)
		return nil
	}
	rep.Sequence = got.Sequence
	return nil
}
