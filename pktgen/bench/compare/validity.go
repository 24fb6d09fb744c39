// Package compare is what a comparison of variants decides with: whether
// the set-up lets its figure move (validity), the positive control that
// shows it can (a variant of firewall rules of known cost, saved per
// machine), and the duet's twin of a lab.
package compare

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

// Setup is what decides whether a comparison's figure can show the
// variants' difference.
type Setup struct {
	Duet     bool
	FullLoad bool   // the traffic has no rate: as fast as the senders go
	Rate     string // the offered rate in words, when it has one
	Figure   string
	// RouterCPUs are the CPUs the routers' receive work is placed on
	// (none: not placed, it runs where the packets arrive); TwinCPUs the
	// twin's, in a duet (the twin copies the lab's placement today).
	RouterCPUs, TwinCPUs []int
	// measured says whether lossless was measured (no trial yet: false);
	// lossless that no trial of any variant lost a packet.
	Measured, Lossless bool
}

// Validity is the judgement of a set-up: whether its figure can move,
// and why, in a sentence a report prints.
type Validity struct {
	Valid bool
	Why   string
}

// rateFigures are the figures that count what was delivered: at a load
// the routers hold they equal what was offered.
var rateFigures = []string{"pps"}

// costFigures are the routers' CPU time per packet, counted by BPF.
var costFigures = []string{"router_ns_per_packet", "router_relative_cost", "cpu_ns_per_packet"}

// Judge says whether s's figure can show the variants' difference.
func Judge(s Setup) Validity {
	rate, cost := slices.Contains(rateFigures, s.Figure), slices.Contains(costFigures, s.Figure)
	switch {
	case s.Duet && s.FullLoad && ShareBacklog(s.RouterCPUs, s.TwinCPUs):
		return Validity{Why: FullLoadDuet(s.RouterCPUs)}
	case s.Duet && s.FullLoad:
		return Validity{Valid: true, Why: fmt.Sprintf("in a duet at full load each twin's routers drain a backlog of their own (cpu%s and cpu%s), so what each forwards is what it can", joinInts(s.RouterCPUs, ","), joinInts(s.TwinCPUs, ","))}
	case rate && s.Measured && s.Lossless && !s.FullLoad:
		return Validity{Why: fmt.Sprintf("no trial of any variant lost a packet at %s: %s is the rate offered whatever the routers cost, so it cannot move; decide on router_relative_cost or router_ns_per_packet (the default at a fixed rate), or offer more than the routers forward", s.Rate, s.Figure)}
	case rate && s.Measured && s.Lossless:
		return Validity{Why: fmt.Sprintf("at full load no trial of any variant lost a packet: the routers forwarded all the senders made, so %s is the senders' top rate, not the routers'; place the routers' work on a CPU of their own (cpus:) so that they are the limit, or give the traffic a rate and decide on router_relative_cost", s.Figure)}
	case rate && s.FullLoad:
		return Validity{Valid: true, Why: fmt.Sprintf("at full load the routers dropped what they could not forward, so %s is what they forward, which falls as their cost per packet rises", s.Figure)}
	case cost && s.FullLoad:
		return Validity{Valid: true, Why: fmt.Sprintf("%s counts the routers' CPU time per packet forwarded (BPF), which moves with their cost at any load; at overload it includes the time the drops cost", s.Figure)}
	case cost:
		return Validity{Valid: true, Why: fmt.Sprintf("%s counts the routers' CPU time per packet (BPF) at %s, a load measured as it was offered: it moves with every nanosecond the variants add", s.Figure, s.Rate)}
	}
	return Validity{Valid: true, Why: fmt.Sprintf("%s was measured in each trial; no rule of nslab's says it is pinned in this set-up", s.Figure)}
}

// ShareBacklog reports whether two twins' routers drain one backlog:
// either is not placed (its work runs where the packets arrive, the
// senders' CPUs), or their CPUs overlap.
func ShareBacklog(a, b []int) bool {
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

// FullLoadDuet is why a duet at full load cannot compare routers.
func FullLoadDuet(cpus []int) string {
	where := "the CPUs the packets arrive on"
	if len(cpus) > 0 {
		where = "cpu" + joinInts(cpus, ",")
	}
	return fmt.Sprintf("in a duet at full load both twins' senders flood and both twins' routers drain one backlog (%s): what each forwards splits by how the packets arrive, not by what each router costs, so A's and B's rates stay equal whatever B does", where)
}

// Words is the set-up in words: "duet at 100kpps", "sequential
// pairs at full load".
func (s Setup) Words() string {
	how := "sequential pairs"
	if s.Duet {
		how = "duet"
	}
	if s.FullLoad {
		return how + " at full load (no rate)"
	}
	return how + " at " + s.Rate
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}
