package mlr

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// The controller. The draft defines goals, classification and results;
// which load to measure next is the implementation's. nslab's is CSIT's
// in outline:
//   - a warm-up trial at the maximum load, discarded (its forwarding rate
//     is the first guess of where the bounds are);
//   - for each goal in turn, phases whose trials grow from the goal's
//     initial trial duration to its final one while the width narrows to
//     the goal's, each phase a goal of its own (that duration as its
//     final trial duration and duration sum, and a coarser width), so
//     that short trials find the neighbourhood cheaply and full-length
//     ones decide;
//   - in a phase: start from the previous phase's bounds (the first phase
//     from the maximum load); where a bound is missing, look for it: above
//     a lower bound a width at a time, doubling, up to the maximum load;
//     below an upper bound at its forwarding rate (load times one less its
//     loss), or a width lower when that is higher; then between the
//     relevant bounds, halving, until they are within the phase's width. A
//     load is measured again until the phase's goal classifies it.
// Every trial at a load counts for every goal and phase after it.

// Measure runs one trial at load (packets per second) for d, and returns
// its result (the loss ratio and the duration it really lasted).
type Measure func(ctx context.Context, load float64, d time.Duration) (Trial, error)

// Search is one MLRsearch.
type Search struct {
	Goals   []Goal
	MaxLoad float64 // the largest load tried (the engine's top rate)
	// MinLoad is the smallest load tried; 0: 0.1% of MaxLoad (a shaper
	// far below the engine's rate, 20 Mbit/s of full-size frames against
	// a top rate of 260000 frames/s, is 0.6% of it).
	MinLoad float64
	// Warmup is the discarded first trial's duration (0: none).
	Warmup  time.Duration
	Measure Measure
	// MaxTrials bounds the search (default 400).
	MaxTrials int
}

// GoalResult is a goal's outcome: its relevant bounds and the
// conditional throughput at its relevant lower bound. LowerBound 0: no
// load was a lower bound (even the minimum load lost too much);
// UpperBound 0: the maximum load was a lower bound (the sender, not the
// system under test, limited the search).
type GoalResult struct {
	Goal                  Goal
	LowerBound            float64
	UpperBound            float64
	ConditionalThroughput float64
}

// Result is a whole search: each goal's outcome and every trial, the
// warm-up's included (marked).
type Result struct {
	Goals  []GoalResult
	Trials []Trial
	Warmup *Trial
}

// ErrTooManyTrials is returned when the search did not end within
// MaxTrials.
var ErrTooManyTrials = errors.New("the search did not end within its trials")

// Run runs the search.
func (s *Search) Run(ctx context.Context) (*Result, error) {
	if s.MaxLoad <= 0 || len(s.Goals) == 0 || s.Measure == nil {
		return nil, fmt.Errorf("mlrsearch: a maximum load, goals and a measure are needed")
	}
	if s.MinLoad <= 0 {
		s.MinLoad = s.MaxLoad / 1000
	}
	if s.MaxTrials <= 0 {
		s.MaxTrials = 400
	}
	st := &state{s: s, byLoad: map[float64][]Trial{}, res: &Result{}}
	if s.Warmup > 0 {
		w, err := s.Measure(ctx, s.MaxLoad, s.Warmup)
		if err != nil {
			return st.res, fmt.Errorf("warm-up trial: %w", err)
		}
		st.res.Warmup, st.guess = &w, s.MaxLoad*(1-w.LossRatio)
	}
	for _, g := range s.Goals {
		for _, p := range phases(g) {
			if err := st.phase(ctx, p); err != nil {
				return st.res, err
			}
			st.hintLo, st.hintHi = st.bounds(p)
		}
	}
	for _, g := range s.Goals {
		st.res.Goals = append(st.res.Goals, st.outcome(g))
	}
	return st.res, nil
}

// phases are the goals a goal is searched through: trial durations from
// its initial one doubling up to its final one, widths from four times
// its own halving down to it, the last phase the goal itself.
func phases(g Goal) []Goal {
	var out []Goal
	d := g.InitialTrial
	if d <= 0 || d > g.FinalTrial {
		d = g.FinalTrial
	}
	n := 0
	for x := d; x < g.FinalTrial; x *= 2 {
		n++
	}
	for i := 0; i < n; i++ {
		p := g
		p.FinalTrial, p.DurationSum = d, d
		p.Width = g.Width * math.Pow(2, float64(n-i))
		out = append(out, p)
		d *= 2
	}
	return append(out, g)
}

// state is a search in progress.
type state struct {
	s      *Search
	byLoad map[float64][]Trial
	res    *Result
	guess  float64 // where the bounds seem to be (the warm-up's forwarding rate)
	// hintLo and hintHi are the previous phase's bounds, where the next
	// phase starts (0: none).
	hintLo, hintHi float64
	step           float64 // the current upward step, as a ratio
}

// measure runs a trial at load for the phase's trial duration.
func (st *state) measure(ctx context.Context, load float64, d time.Duration) error {
	if len(st.res.Trials) >= st.s.MaxTrials {
		return fmt.Errorf("%w (%d)", ErrTooManyTrials, st.s.MaxTrials)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := st.s.Measure(ctx, load, d)
	if err != nil {
		return err
	}
	t.Load, t.Duration = load, d
	st.byLoad[load] = append(st.byLoad[load], t)
	st.res.Trials = append(st.res.Trials, t)
	return nil
}

// classify measures at load until goal p classifies it, and returns its
// class.
func (st *state) classify(ctx context.Context, p Goal, load float64) (Class, error) {
	for {
		if c := Classify(p, st.byLoad[load]); c != Undecided {
			return c, nil
		}
		if err := st.measure(ctx, load, p.FinalTrial); err != nil {
			return Undecided, err
		}
	}
}

// phase narrows goal p's relevant bounds to its width.
func (st *state) phase(ctx context.Context, p Goal) error {
	st.step = p.Width
	for {
		lo, hi := st.bounds(p)
		next, done := st.next(p, lo, hi)
		if done {
			return nil
		}
		if _, err := st.classify(ctx, p, next); err != nil {
			return err
		}
	}
}

// next is the load phase p measures next, given its relevant bounds (0:
// none yet); done when the bounds are within its width.
func (st *state) next(p Goal, lo, hi float64) (float64, bool) {
	switch {
	case hi == 0:
		return st.nextUp(lo)
	case lo == 0:
		return st.nextDown(p, hi)
	case (hi-lo)/hi <= p.Width:
		return 0, true
	}
	mid := roundLoad((lo + hi) / 2)
	if mid <= lo || mid >= hi {
		return 0, true // no load left between them
	}
	return mid, false
}

// nextUp looks for an upper bound above lower bound lo (0: none yet).
func (st *state) nextUp(lo float64) (float64, bool) {
	top := st.s.MaxLoad
	switch {
	case lo == top:
		return 0, true // the maximum load passes: nothing above to find
	case lo == 0 && st.hintHi > 0:
		return st.hintHi, false
	case lo > 0:
		st.step *= 2 // a width, then two, four...: the upper bound moved up since the last phase
		return roundLoad(math.Min(top, lo*(1+st.step))), false
	}
	return top, false
}

// nextDown looks for a lower bound below upper bound hi.
func (st *state) nextDown(p Goal, hi float64) (float64, bool) {
	if hi <= st.s.MinLoad {
		return 0, true // even the minimum load loses too much
	}
	if st.hintLo > 0 && st.hintLo < hi && Classify(p, st.byLoad[st.hintLo]) == Undecided {
		return st.hintLo, false
	}
	cand := hi * (1 - p.Width)
	if fwd := st.forwarding(hi); fwd > 0 && fwd < cand {
		cand = fwd
	}
	if st.guess > 0 && st.guess < cand {
		cand = st.guess
	}
	return roundLoad(math.Max(cand, st.s.MinLoad)), false
}

// forwarding is what load's trials forwarded at best: the load times one
// less the smallest loss ratio measured there.
func (st *state) forwarding(load float64) float64 {
	best := 1.0
	for _, t := range st.byLoad[load] {
		best = math.Min(best, t.LossRatio)
	}
	return load * (1 - best)
}

// bounds are goal p's relevant bounds: the smallest load it classifies
// as an upper bound, and the largest lower bound below it (0: none).
func (st *state) bounds(p Goal) (lo, hi float64) {
	loads := make([]float64, 0, len(st.byLoad))
	for l := range st.byLoad {
		loads = append(loads, l)
	}
	sort.Float64s(loads)
	for _, l := range loads {
		if Classify(p, st.byLoad[l]) == UpperBound {
			hi = l
			break
		}
	}
	for _, l := range loads {
		if (hi == 0 || l < hi) && Classify(p, st.byLoad[l]) == LowerBound {
			lo = l
		}
	}
	return lo, hi
}

// outcome is goal g's result from every trial.
func (st *state) outcome(g Goal) GoalResult {
	lo, hi := st.bounds(g)
	r := GoalResult{Goal: g, LowerBound: lo, UpperBound: hi}
	if lo > 0 {
		r.ConditionalThroughput, _ = ConditionalThroughput(g, lo, st.byLoad[lo])
	}
	return r
}

// roundLoad rounds a load to a whole packet per second.
func roundLoad(l float64) float64 { return math.Round(l) }
