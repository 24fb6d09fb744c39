package bench

import (
	"fmt"
	"slices"
	"strings"
)

// A comparison decides on one figure. Before it may say "faster",
// "slower" or "no change", the figure must be able to move with what the
// variants change in the set-up it was measured in: a figure pinned by
// the set-up (the offered rate, the sender's top rate, a backlog two
// twins drain together) gives a tight interval around zero whatever the
// routers cost, and "no change" from it is confidently wrong. The rules
// below say when a figure is pinned; they are judged on what the run
// measured (its loss), not only on what it asked for.

// setup is what decides whether a comparison's figure can show the
// variants' difference.
type setup struct {
	duet     bool
	fullLoad bool   // the traffic has no rate: as fast as the senders go
	rate     string // the offered rate in words, when it has one
	figure   string
	// routerCPUs are the CPUs the routers' receive work is placed on
	// (none: not placed, it runs where the packets arrive); twinCPUs the
	// twin's, in a duet (the twin copies the lab's placement today).
	routerCPUs, twinCPUs []int
	// measured says whether lossless was measured (no trial yet: false);
	// lossless that no trial of any variant lost a packet.
	measured, lossless bool
}

// validity is the judgement of a set-up: whether its figure can move,
// and why, in a sentence a report prints.
type validity struct {
	valid bool
	why   string
}

// rateFigures are the figures that count what was delivered: at a load
// the routers hold they equal what was offered.
var rateFigures = []string{"pps"}

// costFigures are the routers' CPU time per packet, counted by BPF.
var costFigures = []string{"router_ns_per_packet", "router_relative_cost", "cpu_ns_per_packet"}

// judgeSetup says whether s's figure can show the variants' difference.
func judgeSetup(s setup) validity {
	rate, cost := slices.Contains(rateFigures, s.figure), slices.Contains(costFigures, s.figure)
	switch {
	case s.duet && s.fullLoad && shareBacklog(s.routerCPUs, s.twinCPUs):
		return validity{why: fullLoadDuet(s.routerCPUs)}
	case s.duet && s.fullLoad:
		return validity{valid: true, why: fmt.Sprintf("in a duet at full load each twin's routers drain a backlog of their own (cpu%s and cpu%s), so what each forwards is what it can", joinInts(s.routerCPUs, ","), joinInts(s.twinCPUs, ","))}
	case rate && s.measured && s.lossless && !s.fullLoad:
		return validity{why: fmt.Sprintf("no trial of any variant lost a packet at %s: %s is the rate offered whatever the routers cost, so it cannot move; decide on router_relative_cost or router_ns_per_packet (the default at a fixed rate), or offer more than the routers forward", s.rate, s.figure)}
	case rate && s.measured && s.lossless:
		return validity{why: fmt.Sprintf("at full load no trial of any variant lost a packet: the routers forwarded all the senders made, so %s is the senders' top rate, not the routers'; place the routers' work on a CPU of their own (cpus:) so that they are the limit, or give the traffic a rate and decide on router_relative_cost", s.figure)}
	case rate && s.fullLoad:
		return validity{valid: true, why: fmt.Sprintf("at full load the routers dropped what they could not forward, so %s is what they forward, which falls as their cost per packet rises", s.figure)}
	case cost && s.fullLoad:
		return validity{valid: true, why: fmt.Sprintf("%s counts the routers' CPU time per packet forwarded (BPF), which moves with their cost at any load; at overload it includes the time the drops cost", s.figure)}
	case cost:
		return validity{valid: true, why: fmt.Sprintf("%s counts the routers' CPU time per packet (BPF) at %s, a load measured as it was offered: it moves with every nanosecond the variants add", s.figure, s.rate)}
	}
	return validity{valid: true, why: fmt.Sprintf("%s was measured in each trial; no rule of nslab's says it is pinned in this set-up", s.figure)}
}

// shareBacklog reports whether two twins' routers drain one backlog:
// either is not placed (its work runs where the packets arrive, the
// senders' CPUs), or their CPUs overlap.
func shareBacklog(a, b []int) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, c := range a {
		if slices.Contains(b, c) {
			return true
		}
	}
	return false
}

// fullLoadDuet is why a duet at full load cannot compare routers.
func fullLoadDuet(cpus []int) string {
	where := "the CPUs the packets arrive on"
	if len(cpus) > 0 {
		where = "cpu" + joinInts(cpus, ",")
	}
	return fmt.Sprintf("in a duet at full load both twins' senders flood and both twins' routers drain one backlog (%s): what each forwards splits by how the packets arrive, not by what each router costs, so A's and B's rates stay equal whatever B does", where)
}

// setupWords is the set-up in words: "duet at 100kpps", "sequential
// pairs at full load".
func (s setup) words() string {
	how := "sequential pairs"
	if s.duet {
		how = "duet"
	}
	if s.fullLoad {
		return how + " at full load (no rate)"
	}
	return how + " at " + s.rate
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}
