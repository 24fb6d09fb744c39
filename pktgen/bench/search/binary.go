package search

import (
	"context"
	"time"

	"github.com/nslab/nslab/pktgen/report"
)

// Options tune a binary search of the throughput.
type Options struct {
	Loss     float64       // highest acceptable loss ratio (0.005 for 0.5%); 0: none
	Trial    time.Duration // length of each trial
	MaxSteps int           // binary search steps after the first trial (default 10)
	// Confirm is how many trials in a row the rate found must pass (at
	// least 1); on a machine whose forwarding rate wanders, more make
	// the result hold when rerun.
	Confirm int
}

// Binary finds the throughput of r's traffic by binary search over the
// sender's rate, with trials of so.Trial each, into res (whose run and
// frame the caller named).
func Binary(ctx context.Context, r Runner, so Options, res *report.SearchResult) error {
	if so.Trial <= 0 {
		so.Trial = 2 * time.Second
	}
	res.LossAccepted = so.Loss
	defer r.Quiet()()
	threads := uint64(r.Threads())
	trial := func(pps uint64) (report.Trial, error) {
		rate := pps / threads // pps is the whole traffic's, as the trials' sent rate is
		if pps > 0 && rate == 0 {
			rate = 1
		}
		rep, err := r.Trial(ctx, rate, 0, so.Trial, AsAsked)
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
	return binary(res, so, trial)
}

// binary is the binary search itself, over any trial function.
func binary(res *report.SearchResult, so Options, trial func(pps uint64) (report.Trial, error)) error {
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
