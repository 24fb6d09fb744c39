package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// A comparison asked at full load (the traffic has no rate) decides on
// the rate the routers forward, which on our machines spreads 10-16% a
// pair of 1 s trials: far more than a 2-3% margin, so that it answers
// "cannot tell" after the most pairs it may take. The routers' cost per
// packet at a rate they hold answers a change of a few percent in
// seconds (docs/benchmarking.md). So a full-load comparison first
// measures a few pairs at full load; when their spread is larger than the
// margin, it finds a rate every variant holds (a short search down from
// half of what full load forwarded) and decides on the cost per packet
// there, saying so in one line, with the full-load rate kept beside it as
// information.

// probePairs are the full-load pairs measured to see the rate's spread.
const probePairs = 6

// heldRateTries is how many rates the short search tries, each half the
// one before.
const heldRateTries = 4

// asksFullLoad reports whether the comparison is one the full-load rule
// takes: variants compared in sequential pairs, on UDP traffic with no
// rate, on the figure nslab picks (no --figure, no search).
func (req Request) asksFullLoad() bool {
	return len(req.Variants) > 1 && req.fullLoad() && !req.Duet && req.Figure == "" && req.Repeat == 0 &&
		req.Search == nil && req.MLR == nil && req.RFC2544 == nil && len(req.LatencyAt) == 0 && req.controlName == ""
}

// fullLoadProbe is what the pairs at full load found: each comparison's
// decision, the spread of one pair, and what the first variant received.
type fullLoadProbe struct {
	comparisons []*report.Comparison
	spread      float64 // the largest pair spread of the comparisons, %
	received    float64 // the first variant's median rate received, pps
}

// atFullLoad measures probePairs pairs of the variants at full load and
// returns what they found.
func (req Request) atFullLoad(ctx context.Context, m *lab.Manager, r *lab.Running) (*fullLoadProbe, error) {
	p := req
	p.Repeat, p.MaxTime, p.CheckSensitivity = probePairs, 0, false
	p.control = nil
	out := &Outcome{}
	req.progress("full load (no rate): %d pairs first, to see how far the rate forwarded spreads\n", probePairs)
	if err := p.eachVariant(ctx, m, r, out); err != nil {
		return nil, err
	}
	pr := &fullLoadProbe{comparisons: out.Comparisons}
	for _, c := range out.Comparisons {
		if d := c.Decision; d != nil {
			pr.spread = max(pr.spread, d.PairSD)
		}
	}
	var got []float64
	for _, rep := range out.Reports {
		if rep.Variant == req.Variants[0] && rep.PPS > 0 {
			got = append(got, rep.PPS)
		}
	}
	pr.received = stats.Median(got)
	return pr, nil
}

// heldRate searches down from half of what full load forwarded for a
// rate at which no variant loses a packet in a trial: the routers hold
// it, so their cost per packet is theirs alone. It returns 0 when none of
// heldRateTries rates was held.
func (req Request) heldRate(ctx context.Context, m *lab.Manager, r *lab.Running, received float64) (uint64, error) {
	defer func() { _ = m.ApplyVariant(context.WithoutCancel(ctx), req.Lab, spec.BaseVariant) }()
	rate := uint64(received/2/1000) * 1000
	for range heldRateTries {
		if rate < 1000 {
			return 0, nil
		}
		held, err := req.holds(ctx, m, r, rate)
		if err != nil || held {
			return rate, err
		}
		rate /= 2
	}
	return 0, nil
}

// holds measures one trial of every variant at rate and reports whether
// none lost a packet.
func (req Request) holds(ctx context.Context, m *lab.Manager, r *lab.Running, rate uint64) (bool, error) {
	t := *req.Traffic
	t.RatePPS, t.RateMbps = rate, 0
	at := req
	at.Traffic = &t
	for _, name := range req.Variants {
		if err := m.ApplyVariant(ctx, req.Lab, name); err != nil {
			return false, err
		}
		scratch := &Outcome{}
		if err := at.underVariant(ctx, r, name, "search/"+runID(), report.NewResultsFile("search", true), scratch); err != nil {
			return false, err
		}
		for _, rep := range scratch.Reports {
			if rep.Loss > 0 {
				req.progress("a rate the routers hold: %d pps lost %d packets under variant %s\n", rate, rep.Loss, name)
				return false, nil
			}
		}
	}
	req.progress("a rate the routers hold: %d pps, no variant lost a packet\n", rate)
	return true, nil
}

// settleFullLoad runs the full-load rule before a comparison: it returns
// the request to compare with (the traffic at a rate the routers hold,
// when the full-load rate spreads more than the margin), and the
// full-load pairs' comparisons, kept as information. The pairs at full
// load never decide: they are too few for the comparison's error rate
// (6 pairs reach a signed-rank level of 96.9% at best), and measure only
// the spread.
func (req Request) settleFullLoad(ctx context.Context, m *lab.Manager, r *lab.Running) (Request, []*report.Comparison, error) {
	began := time.Now()
	pr, err := req.atFullLoad(ctx, m, r)
	if err != nil {
		return req, nil, err
	}
	margin := 100 * req.plan().Margin
	if pr.spread <= margin || pr.received <= 0 {
		return req, nil, nil // the rate decides: measured again in full, as asked
	}
	rate, err := req.heldRate(ctx, m, r, pr.received)
	if err != nil {
		return req, nil, err
	}
	if rate == 0 {
		req.progress("no rate below %.0f pps was held by every variant: the comparison stays at full load\n", pr.received/2)
		return req, nil, nil
	}
	t := *req.Traffic
	t.RatePPS, t.RateMbps = rate, 0
	held := req
	held.Traffic = &t
	held.replaced = fmt.Sprintf("asked at full load, where one pair of the rate forwarded spread %.1f%%, more than the margin of %.3g%%: measured at %d pps, a rate every variant held (a short search down from half of the %.0f pps full load forwarded), where the routers' cost per packet is theirs alone; the full-load rate is kept as information", pr.spread, margin, rate, pr.received)
	held.MaxTime = max(req.maxTime()-time.Since(began), 10*time.Second)
	req.progress("figure changed: %s\n", held.replaced)
	// The full-load trials stay in the comparisons kept as information,
	// not among the reports of the rate held, whose summaries they would
	// mix with.
	return held, pr.comparisons, nil
}

// keepFullLoad puts each full-load comparison's decision beside the
// comparison of the same variants made at the held rate, as information.
func keepFullLoad(comparisons, fullLoad []*report.Comparison) {
	for _, c := range comparisons {
		i := slices.IndexFunc(fullLoad, func(f *report.Comparison) bool { return f.New == c.New && f.Old == c.Old })
		if i >= 0 && c.Decision != nil && fullLoad[i].Decision != nil {
			c.Decision.FullLoad = fullLoad[i].Decision
		}
	}
}
