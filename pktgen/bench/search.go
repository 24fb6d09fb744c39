package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/nslab/nslab/pktgen/kstat"
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

// Trial is one fixed-rate trial of a search.
type Trial struct {
	OfferedPPS uint64  `json:"offered_pps"` // 0: as fast as the engine goes
	SentPPS    float64 `json:"sent_pps"`
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
	LossRatio  float64 `json:"loss_ratio"`
	Pass       bool    `json:"pass"`
	Bottleneck string  `json:"bottleneck"`
	Bursts     bool    `json:"bursts,omitempty"` // it lost packets in bursts, not from load (see Verdict)
}

// SearchResult is the throughput found for one frame size, as RFC 2544
// section 26.1 defines it: the highest offered rate whose loss is at most
// the accepted ratio, confirmed by a final trial.
type SearchResult struct {
	Lab           string  `json:"lab"`
	Traffic       string  `json:"traffic"`
	Variant       string  `json:"variant,omitempty"` // see Report.Variant
	Frame         int     `json:"frame"`
	ThroughputPPS float64 `json:"throughput_pps"`
	MbpsL2        float64 `json:"mbps_l2"`
	MbpsL1        float64 `json:"mbps_l1"`
	LossAccepted  float64 `json:"loss_accepted"`
	Trials        []Trial `json:"trials"`
	Confirmed     bool    `json:"confirmed"`
	SenderLimited bool    `json:"sender_limited"` // even the engine's top rate passed
	Engine        string  `json:"engine"`
	// Bottleneck is the verdict of the trial at the engine's top rate:
	// what limits the path when it is pushed.
	Bottleneck  string  `json:"bottleneck"`
	LinkSpeed   uint32  `json:"link_speed_mbps,omitempty"` // the sender link's speed, as its driver reports it
	LineRatePPS float64 `json:"line_rate_pps,omitempty"`   // frames of this size that speed carries
}

// Search finds the throughput of the bench's traffic at one frame size by
// binary search over the engine's rate, with trials of so.Trial each.
func (b *Bench) Search(ctx context.Context, frame int, so SearchOptions) (*SearchResult, error) {
	if so.Trial <= 0 {
		so.Trial = 2 * time.Second
	}
	res := &SearchResult{Lab: b.run.Lab.Name, Traffic: b.t.Name, Variant: b.opts.Variant, Frame: frame, LossAccepted: so.Loss, Engine: b.eng.Name()}
	live := b.opts.Live
	b.opts.Live = nil
	defer func() { b.opts.Live = live }()
	trial := func(pps uint64) (Trial, error) {
		tt := *b.t
		tt.Count, tt.Duration, tt.RatePPS, tt.RateMbps = 0, so.Trial, pps, 0
		rep, err := b.measure(ctx, &tt, frame)
		if err != nil {
			return Trial{}, err
		}
		tr := Trial{OfferedPPS: pps, Sent: rep.Sent, Received: rep.Received, Bottleneck: rep.Bottleneck, Bursts: rep.Verdict.Bursts}
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
	res.MbpsL2, res.MbpsL1 = mbps(res.ThroughputPPS, float64(frame))
	if res.LinkSpeed = kstat.LinkSpeed(b.run.Node(b.t.From.Node).NS, b.t.From.Interface); res.LinkSpeed > 0 {
		res.LineRatePPS = kstat.LineRatePPS(res.LinkSpeed, frame)
	}
	return res, err
}

// search is the binary search itself, over any trial function.
func search(res *SearchResult, so SearchOptions, trial func(pps uint64) (Trial, error)) error {
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

// burstTrials counts the failed trials that lost packets in bursts.
func (r *SearchResult) burstTrials() int {
	n := 0
	for _, t := range r.Trials {
		if !t.Pass && t.Bursts {
			n++
		}
	}
	return n
}

// confirm runs n trials at pps and reports whether every one passed; it
// stops at the first that does not.
func confirm(pps uint64, n int, trial func(pps uint64) (Trial, error)) (bool, error) {
	for k := 0; k < n; k++ {
		tr, err := trial(pps)
		if err != nil || !tr.Pass {
			return false, err
		}
	}
	return true, nil
}

// WriteSearch prints search results as a table, with every trial and the
// verdict at the engine's top rate.
func WriteSearch(w io.Writer, rs []*SearchResult) error {
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "frame\tthroughput pps\tMb/s L2\tMb/s L1\ttrials\tconfirmed\tline rate pps\t")
	for _, r := range rs {
		note := fmt.Sprint(r.Confirmed)
		if r.SenderLimited {
			note = "sender-limited"
		}
		line := "unknown"
		if r.LineRatePPS > 0 {
			line = fmt.Sprintf("%.0f (%d Mb/s link)", r.LineRatePPS, r.LinkSpeed)
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.1f\t%d\t%s\t%s\t\n", r.Frame, r.ThroughputPPS, r.MbpsL2, r.MbpsL1, len(r.Trials), note, line)
	}
	tw.Flush()
	for _, r := range rs {
		ew.printf("\nframe %d (%s, loss accepted %.3f%%): at the top rate, bottleneck: %s\n", r.Frame, r.Engine, 100*r.LossAccepted, r.Bottleneck)
		if n := r.burstTrials(); n > 0 {
			ew.printf("%d failed trial(s) lost packets in bursts with the dropping CPU under 60%% busy: below its capacity the path drops\n"+
				"when that CPU stalls, so the rate found is set by those stalls as much as by forwarding (rerun it before you publish it)\n", n)
		}
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "offered pps\tsent pps\tsent\treceived\tloss %\tpass\t  bottleneck")
		for _, t := range r.Trials {
			offered := fmt.Sprint(t.OfferedPPS)
			if t.OfferedPPS == 0 {
				offered = "max"
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%d\t%d\t%.3f\t%v\t  %s\n", offered, t.SentPPS, t.Sent, t.Received, 100*t.LossRatio, t.Pass, t.Bottleneck)
		}
		tw.Flush()
	}
	return ew.err
}
