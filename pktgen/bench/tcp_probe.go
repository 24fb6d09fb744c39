package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"io"
	"time"

	"github.com/nslab/nslab/pktgen/bench/tcp"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/frame"
	"github.com/nslab/nslab/topology/spec"
)

// Latency under load, flent's RRUL way: a sequenced UDP stream of small
// frames from the sender to the receiver, read at the receiver with the
// reader that --latency uses, first alone (idle) and then beside the TCP
// flows (under load). Its packets take the TCP flows' queues (they go
// through the sender interface's qdisc too), so what they wait there is
// what an application's packet would.

// Probe settings: tcp.ProbeRate frames a second, idle for probeIdle
// first.
const (
	probeIdle = time.Second
	probePort = 7 // the echo port: not the UDP runs' 9, so a probe is never taken for one
)

// probe is the latency probe of a TCP run.
type probe struct {
	b    *Bench
	t    spec.Traffic
	sink io.Closer
}

// newProbe binds the probe's port in the receiver's namespace (so that it
// answers no ICMP), here or on the receiver's host, and prepares its
// stream.
func (b *Bench) newProbe() (*probe, error) {
	t := spec.Traffic{Name: b.t.Name + " probe", From: b.t.From, To: b.t.To, Frames: []int{b.probeFrame()}, RatePPS: tcp.ProbeRate, Threads: 1,
		Engine: "userspace", DstPorts: [2]int{probePort, probePort}}
	p := &probe{b: b, t: t}
	var err error
	if n := b.run.Node(b.receiverNode()); n != nil {
		p.sink, err = remote.OpenSink(n.NS, t.Flow().Port, t.To.Is6())
	} else if b.meas.hops != nil { // held on the receiver's host until the bench ends
		err = b.meas.hops.HoldUDP(b.receiverHost(), remote.Sink{Node: b.receiverNode(), Port: t.Flow().Port, IPv6: t.To.Is6()})
	}
	if err != nil {
		return nil, fmt.Errorf("latency probe: %w", err)
	}
	return p, nil
}

func (p *probe) close() {
	if p.sink != nil {
		_ = p.sink.Close()
	}
}

// started is a probe stream under way.
type started struct {
	reader arrivalsReader
	done   chan probeSent
}

type probeSent struct {
	res *engine.Result
	err error
}

// start opens the reader and sends the probe stream for d, in the
// background.
func (p *probe) start(ctx context.Context, d time.Duration) (*started, error) {
	r, err := p.b.openReader(&p.t, 1)
	if err != nil {
		return nil, fmt.Errorf("latency probe: %w", err)
	}
	job := jobFor(&p.t, p.t.Frames[0], p.b.run.Node(p.t.From.Node).NS, p.b.path.SenderMAC())
	job.Duration, job.Count = d, 0
	job.Options = withOption(job.Options, "qdisc", "through")
	s := &started{reader: r, done: make(chan probeSent, 1)}
	go func() {
		res, err := userspace.Engine{}.Run(ctx, job)
		s.done <- probeSent{res, err}
	}()
	return s, nil
}

// finish waits for the stream to end and reads what arrived: its latency
// and the accounting by sequence number. The path has settled.
func (s *started) finish() (*receive.Latency, *receive.Sequence, error) {
	sent := <-s.done
	var handed uint64
	if sent.res != nil {
		handed = sent.res.Handed()
	}
	got, err := s.reader.stop(100*time.Millisecond, remote.ArrivalsAsk{Method: fmt.Sprintf("a probe of %d frames a second", tcp.ProbeRate), ResolutionNs: 1,
		Sequence: true, FirstSeq: engine.FirstSeq, Sent: handed})
	if sent.err != nil || err != nil {
		return nil, nil, fmt.Errorf("latency probe: %w", errors.Join(sent.err, err))
	}
	return got.Latency, got.Sequence, nil
}

// idle measures the probe alone, before the flows start.
func (p *probe) idle(ctx context.Context) (*receive.Latency, *receive.Sequence, error) {
	s, err := p.start(ctx, probeIdle)
	if err != nil {
		return nil, nil, err
	}
	return s.finish()
}

// probeFrame is the size of the probe's frames.
func (b *Bench) probeFrame() int { return frame.Min(b.t.To.Is6()) }
