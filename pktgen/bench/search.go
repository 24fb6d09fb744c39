package bench

import (
	"context"
	"time"

	"github.com/nslab/nslab/pktgen/bench/search"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/report"
)

// The searches of a rate (package search) run their trials through the
// bench: each trial is a measured run of its traffic, with its accounting
// and verdict.

// Search finds the throughput of the bench's traffic at one frame size by
// binary search over the engine's rate (search.Binary).
func (b *Bench) Search(ctx context.Context, frame int, so search.Options) (*report.SearchResult, error) {
	res := &report.SearchResult{Lab: b.run.Lab.Name, Traffic: b.t.Name, Variant: b.opts.Variant, Block: b.opts.Block, Frame: frame, Engine: b.eng.Name()}
	err := search.Binary(ctx, b.trials(frame), so, res)
	res.MbpsL2, res.MbpsL1 = report.Mbps(res.ThroughputPPS, float64(frame))
	if res.LinkSpeed = kstat.LinkSpeed(b.run.Node(b.t.From.Node).NS, b.t.From.Interface); res.LinkSpeed > 0 {
		res.LineRatePPS = kstat.LineRatePPS(res.LinkSpeed, frame)
	}
	return res, err
}

// MLRSearch runs MLRsearch's goals on the bench's traffic at one frame
// size (search.MLR).
func (b *Bench) MLRSearch(ctx context.Context, frame int, o search.MLROptions) (*report.MLRResult, error) {
	res := &report.MLRResult{Lab: b.run.Lab.Name, Traffic: b.t.Name, Variant: b.opts.Variant, Block: b.opts.Block, Frame: frame, Engine: b.eng.Name()}
	return res, search.MLR(ctx, b.trials(frame), o, res)
}

// RFC2544 runs RFC 2544's four benchmarks on frame (search.RFC2544).
func (b *Bench) RFC2544(ctx context.Context, frame int, o search.RFC2544Options) (*report.RFC2544Result, error) {
	res := &report.RFC2544Result{Lab: b.run.Lab.Name, Traffic: b.t.Name, Variant: b.opts.Variant, Block: b.opts.Block, Frame: frame, Engine: b.eng.Name()}
	return res, search.RFC2544(ctx, b.trials(frame), o, res)
}

// trials runs a search's trials of the bench's traffic at frame
// (search.Runner).
type trials struct {
	b     *Bench
	frame int
}

func (b *Bench) trials(frame int) trials { return trials{b, frame} }

// Trial implements search.Runner: one measured run, the traffic's rate,
// count and duration replaced.
func (t trials) Trial(ctx context.Context, rate, count uint64, d time.Duration, l search.Latency) (*report.Report, error) {
	b := t.b
	if l != search.AsAsked {
		saved := b.opts.Latency
		b.opts.Latency = l == search.Read
		defer func() { b.opts.Latency = saved }()
	}
	tt := *b.t
	tt.Count, tt.Duration, tt.RatePPS, tt.RateMbps = count, d, rate, 0
	return b.measure(ctx, &tt, t.frame)
}

// Threads implements search.Runner.
func (t trials) Threads() int { return max(1, t.b.t.Threads, len(t.b.t.CPUs)) }

// Quiet implements search.Runner: no live output while a search runs.
func (t trials) Quiet() func() {
	live := t.b.opts.Live
	t.b.opts.Live = nil
	return func() { t.b.opts.Live = live }
}
