package bench

import (
	"time"

	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/spec"
)

// liveStream turns each sample of a run of t into an interval line of the
// live stream (Options.Stream): every measured hop's rates and drops, and
// each CPU's use and softnet counts over the same interval, read by the
// sampler's goroutine in the caller's namespace. nil without a stream.
func (b *Bench) liveStream(t *spec.Traffic, frame int) func(sample.Sample) {
	if b.opts.Stream == nil {
		return nil
	}
	var first, prev *sample.Sample
	cpu, soft := kstat.CPUTimes(), kstat.Softnet()
	return func(s sample.Sample) {
		c, sn := kstat.CPUTimes(), kstat.Softnet()
		if prev == nil {
			first = &s
		} else {
			e := report.LiveEvent{Type: report.LiveInterval, Time: time.Now(), Lab: b.run.Lab.Name, Traffic: t.Name, Frame: frame,
				OfferedPPS: offeredPPS(t, frame), At: (s.At - first.At).Seconds(), Interval: (s.At - prev.At).Seconds(),
				CPU: report.CPUUses(cpu, c), Softnet: report.SoftnetUses(soft, sn)}
			for i, r := range sample.Rates(*prev, s) {
				tg := b.meas.targets[i]
				e.Hops = append(e.Hops, report.LiveHop{Node: tg.Node, Interface: tg.Interface, Role: b.meas.roles[i],
					RxPPS: r.RxPPS, TxPPS: r.TxPPS, RxMbps: r.RxMbps, TxMbps: r.TxMbps, Drops: r.Drops})
			}
			b.opts.Stream(e)
		}
		prev, cpu, soft = &s, c, sn
	}
}

// both calls f and g (either may be nil) with each sample.
func both(f, g func(sample.Sample)) func(sample.Sample) {
	switch {
	case f == nil:
		return g
	case g == nil:
		return f
	}
	return func(s sample.Sample) { f(s); g(s) }
}
