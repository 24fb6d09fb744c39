package bench

import (
	"context"
	"fmt"

	"github.com/nslab/nslab/pktgen/report"
)

// Latency under load, CSIT's way: the run measured at fractions of a
// rate (RFC 2544's latency at the throughput rate; CSIT's at 10, 50 and
// 90% of its PDR). The rate is the traffic run's own when it has one, or
// else the top rate the receiver got in a first run as fast as the
// engine goes.

// LatencyAt measures frame at each of fractions (0 < f <= 1) of the run's
// rate, every packet read at the receiver. It returns the runs in order:
// the top-rate run first when it measured one. Each report's Load says
// what it was.
func (b *Bench) LatencyAt(ctx context.Context, frame int, fractions []float64) ([]*report.Report, error) {
	saved := b.opts.Latency
	b.opts.Latency = true
	defer func() { b.opts.Latency = saved }()
	var out []*report.Report
	base, from := float64(offeredPPS(b.t, frame)), "the run's rate"
	if base == 0 {
		top, err := b.measure(ctx, b.t, frame)
		if err != nil {
			return nil, err
		}
		top.Load = "top rate: as fast as the engine goes"
		out = append(out, top)
		base, from = top.PPS, "the top rate received"
		if base <= 0 {
			return out, fmt.Errorf("frame %d: nothing arrived at the top rate, so no load can be taken from it", frame)
		}
	}
	for _, f := range fractions {
		t := *b.t
		t.RatePPS, t.RateMbps = max(1, uint64(f*base)), 0
		rep, err := b.measure(ctx, &t, frame)
		if rep != nil {
			rep.Load = fmt.Sprintf("%g%% of %.0f pps (%s)", 100*f, base, from)
			out = append(out, rep)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
