package bench

import (
	"context"
	"time"

	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/report"
)

// SearchOptions tune a throughput search.
type SearchOptions struct {
	Loss     float64       // highest acceptable loss ratio (0.005 for 0.5%); 0: none
	Trial    time.Duration // length of each trial
	MaxSteps int           // binary search steps after the first trial (default 10)
	// Confirm is how many trials in a row the rate found must pass (at
	// least 1); on a machine whose forwarding rate wanders, more make
	// the result hold when rerun.
	Confirm int
}

// Search finds the throughput of the bench's traffic at one frame size by
// binary search over the engine's rate, with trials of so.Trial each.
func (b *Bench) Search(ctx context.Context, frame int, so SearchOptions) (*report.SearchResult, error) {
	if so.Trial <= 0 {
		so.Trial = 2 * time.Second
	}
	res := &report.SearchResult{Lab: b.run.Lab.Name, Traffic: b.t.Name, Variant: b.opts.Variant, Block: b.opts.Block, Frame: frame, LossAccepted: so.Loss, Engine: b.eng.Name()}
	live := b.opts.Live
	b.opts.Live = nil
	defer func() { b.opts.Live = live }()
	trial := func(pps uint64) (report.Trial, error) {
		tt := *b.t
		tt.Count, tt.Duration, tt.RatePPS, tt.RateMbps = 0, so.Trial, pps, 0
		rep, err := b.measure(ctx, &tt, frame)
		if err != nil {
			return report.Trial{}, err
		}
		tr := report.Trial{OfferedPPS: pps, Sent: rep.Sent, Received: rep.Received, Bottleneck: rep.Bottleneck, Bursts: rep.Verdict.Bursts}
		if rep.Elapsed > 0 {
			tr.SentPPS = float64(rep.Sent) / rep.Elapsed.Seconds()
		}
		tr.LossRatio = rep.PathLossRatio()
		tr.Pass = rep.Sent > 0 && tr.LossRatio <= so.Loss
		if pps == 0 {
			res.Bottleneck = rep.Bottleneck
		}
		res.Trials = append(res.Trials, tr)
		return tr, nil
	}
	err := search(res, so, trial)
	res.MbpsL2, res.MbpsL1 = report.Mbps(res.ThroughputPPS, float64(frame))
	if res.LinkSpeed = kstat.LinkSpeed(b.run.Node(b.t.From.Node).NS, b.t.From.Interface); res.LinkSpeed > 0 {
		res.LineRatePPS = kstat.LineRatePPS(res.LinkSpeed, frame)
	}
	return res, err
}

// search is the binary search itself, over any trial function.
func search(res *report.SearchResult, so SearchOptions, trial func(pps uint64) (report.Trial, error)) error {
	if so.MaxSteps <= 0 {
		so.MaxSteps = 10
	}
	top, err := trial(0)
	if err != nil {
		return err
	}
	hi := uint64(top.SentPPS)
	if top.Pass {
		res.SenderLimited = true
		res.ThroughputPPS, res.Confirmed = top.SentPPS, true
		return nil
	}
	lo := uint64(0)
	for step := 0; step < so.MaxSteps && hi-lo > max(hi/100, 1); step++ {
		mid := (lo + hi) / 2
		tr, err := trial(mid)
		if err != nil {
			return err
		}
		if tr.Pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Confirm: the rate must pass so.Confirm trials in a row; step
	// down 3% at a time while it does not (down to about half).
	for i := 0; i < 20 && lo > 0 && !res.Confirmed; i++ {
		ok, err := confirm(lo, max(so.Confirm, 1), trial)
		if err != nil {
			return err
		}
		if ok {
			res.Confirmed, res.ThroughputPPS = true, float64(lo)
		} else {
			lo = lo * 97 / 100
		}
	}
	return nil
}

// confirm runs n trials at pps and reports whether every one passed; it
// stops at the first that does not.
func confirm(pps uint64, n int, trial func(pps uint64) (report.Trial, error)) (bool, error) {
	for k := 0; k < n; k++ {
		tr, err := trial(pps)
		if err != nil || !tr.Pass {
			return false, err
		}
	}
	return true, nil
}
