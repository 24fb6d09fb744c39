package report

import "github.com/nslab/nslab/pktgen/measured"

// Rates fills the receiver's rates from the counts and the samples.
func (r *Report) Rates() {
	switch {
	case r.ReceiveWindow > 0:
		r.PPS = float64(r.Received) / r.ReceiveWindow.Seconds()
	case r.Elapsed > 0:
		r.PPS = float64(r.Received) / r.Elapsed.Seconds()
	}
	r.MbpsL2, r.MbpsL1 = Mbps(r.PPS, r.frameBytes())
	if a, b, ok := measured.Steady(r.sendingSamples()); ok {
		last := len(r.Hops) - 1
		r.SteadyPPS = measured.Rates(a, b)[last].RxPPS
		r.SteadyL2, _ = Mbps(r.SteadyPPS, r.frameBytes())
	}
}

func Mbps(pps float64, frame float64) (l2, l1 float64) {
	return pps * float64(frame) * 8 / 1e6, pps * float64(frame+20) * 8 / 1e6
}

// sendingSamples are the run's samples taken while the engine sent: from
// the first (taken as it started) to Elapsed after it. Those after are the
// path draining (an impairment's queue, another host's), which a steady
// window of the sending must not take in.
func (r *Report) sendingSamples() []measured.Sample {
	if len(r.Samples) == 0 || r.Elapsed <= 0 {
		return r.Samples
	}
	cut := r.Samples[0].At + r.Elapsed
	for i, s := range r.Samples {
		if s.At > cut {
			return r.Samples[:i]
		}
	}
	return r.Samples
}
