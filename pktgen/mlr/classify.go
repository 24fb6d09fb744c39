// Package mlr is MLRsearch, the Multiple Loss Ratio search of
// draft-ietf-bmwg-mlrsearch-15 (published as RFC 9971): a search for
// several loss ratio goals at once (NDR and PDR) whose results hold on a
// noisy system under test, because a load is classified from every trial
// measured at it, against each goal's exceed ratio and duration sum,
// instead of from one trial.
//
// This file is the draft's normative logic: Load Classification
// (Appendix A) and Conditional Throughput (Appendix B), over the trials
// measured at one load. search.go is nslab's controller: which load to
// measure next and for how long, which the draft leaves to the
// implementation. Nothing here touches the kernel: the trials come from a
// function.
package mlr

import (
	"sort"
	"time"
)

// Goal is a Search Goal (draft section 4.6).
type Goal struct {
	Name string
	// LossRatio is the Goal Loss Ratio: a trial that loses more is a
	// high-loss trial for this goal.
	LossRatio float64
	// ExceedRatio is the Goal Exceed Ratio: the share of the duration sum
	// that high-loss trials may take at a Lower Bound.
	ExceedRatio float64
	// FinalTrial is the Goal Final Trial Duration: trials at least this
	// long are full-length trials.
	FinalTrial time.Duration
	// DurationSum is the Goal Duration Sum: how much trial time a load
	// needs before it is classified.
	DurationSum time.Duration
	// Width is the Goal Width, relative: the search ends when the relevant
	// bounds are within Width of the upper one.
	Width float64
	// InitialTrial is the Goal Initial Trial Duration: the search starts
	// with trials this long.
	InitialTrial time.Duration
}

// Trial is a Trial Result at one load.
type Trial struct {
	Load      float64       // the intended load, packets per second
	Duration  time.Duration // the Trial Duration asked for
	Effective time.Duration // the Trial Effective Duration: what it really lasted
	LossRatio float64       // the Trial Loss Ratio
}

// Class is a load's classification for one goal.
type Class int

// Classes of a load.
const (
	Undecided Class = iota
	LowerBound
	UpperBound
)

func (c Class) String() string {
	return [...]string{"undecided", "lower bound", "upper bound"}[c]
}

// sums are a load's trial durations for one goal, by kind (draft A).
type sums struct {
	fullLow, fullHigh, shortLow, shortHigh float64 // seconds
}

func sumsOf(g Goal, trials []Trial) sums {
	var s sums
	for _, t := range trials {
		d := t.Effective.Seconds()
		high := t.LossRatio > g.LossRatio
		switch full := t.Duration >= g.FinalTrial; {
		case full && high:
			s.fullHigh += d
		case full:
			s.fullLow += d
		case high:
			s.shortHigh += d
		default:
			s.shortLow += d
		}
	}
	return s
}

// Classify classifies a load from the trials measured at it, for goal g,
// as draft-ietf-bmwg-mlrsearch-15 Appendix A computes it.
func Classify(g Goal, trials []Trial) Class {
	s := sumsOf(g, trials)
	exceedCoefficient := g.ExceedRatio / (1 - g.ExceedRatio)
	balancing := s.shortLow * exceedCoefficient
	positiveExcess := max(0, s.shortHigh-balancing)
	effectHighLoss := s.fullHigh + positiveExcess
	effectFullLength := s.fullLow + effectHighLoss
	effectWhole := max(effectFullLength, g.DurationSum.Seconds())
	quantileDuration := effectWhole * g.ExceedRatio
	pessimisticHighLoss := effectWhole - s.fullLow
	pessimisticIsLower := pessimisticHighLoss <= quantileDuration
	optimisticIsLower := effectHighLoss <= quantileDuration
	switch {
	case pessimisticIsLower && optimisticIsLower:
		return LowerBound
	case !pessimisticIsLower && !optimisticIsLower:
		return UpperBound
	}
	return Undecided
}

// ConditionalThroughput is the load's forwarding rate at the goal's
// exceed-ratio quantile of its full-length trials' loss ratios, as
// draft-ietf-bmwg-mlrsearch-15 Appendix B computes it; false when no
// full-length trial was measured at the load.
func ConditionalThroughput(g Goal, load float64, trials []Trial) (float64, bool) {
	var full []Trial
	for _, t := range trials {
		if t.Duration >= g.FinalTrial {
			full = append(full, t)
		}
	}
	if len(full) == 0 {
		return 0, false
	}
	sort.SliceStable(full, func(i, j int) bool { return full[i].LossRatio < full[j].LossRatio })
	s := sumsOf(g, full)
	whole := max(g.DurationSum.Seconds(), s.fullLow+s.fullHigh)
	remaining := whole * (1 - g.ExceedRatio)
	quantile, set := 0.0, false
	for _, t := range full {
		if set && remaining <= 0 {
			break
		}
		quantile, set = t.LossRatio, true
		remaining -= t.Effective.Seconds()
	}
	if remaining > 0 {
		quantile = 1 // the goal's duration sum is not covered: what is missing counts as lost
	}
	return load * (1 - quantile), true
}
