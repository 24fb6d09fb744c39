package bench

import (
	"context"
	"fmt"

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
// receiver's interface (the last measured one).
func (b *Bench) openReader(t *spec.Traffic, every uint32) (*receive.Reader, error) {
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

// stampResolution is the send stamp's resolution of the bench's engine.
func (b *Bench) stampResolution() int64 {
	if _, pktgen := b.eng.(kernel.Engine); pktgen {
		return 1000 // pktgen_hdr's tv_usec
	}
	return 1
}

// readerResult stops the reader of a run (the path has settled) and puts
// what it read into rep: the latency, and the sequence accounting when
// one thread sent (threads number their packets alike, so the reader
// cannot tell two threads' packets apart).
func (b *Bench) readerResult(r *receive.Reader, every uint32, res *engine.Result, rep *report.Report) error {
	got, err := r.Stop(context.Background(), 0)
	if err != nil {
		return err
	}
	rep.Latency = got.Tracker.Latency(methodOf(every), b.stampResolution())
	rep.ReaderMissed = got.Missed
	if every > 1 {
		rep.SequenceNote = "no accounting by sequence: the reader read " + methodOf(every)
		return nil
	}
	if rep.Mix != "" {
		rep.ReceivedSizes = got.Tracker.Sizes()
	}
	if n := len(res.Threads); n > 1 {
		rep.SequenceNote = fmt.Sprintf("no accounting by sequence: %d sender threads number their packets alike", n)
		return nil
	}
	rep.Sequence = got.Tracker.Sequence(engine.FirstSeq, map[int]uint64{0: res.Handed()})
	return nil
}
