package account

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/report"
)

// What the runs of a group measured together come to: the drops of their
// paths, each counter once, and what the aggregate's verdict rests on.

// GSOSegments names what the counters cannot see of the TCP runs' losses:
// TCP_INFO counts every data segment lost, a drop counter a GSO packet of
// several segments once. The rest of the aggregate's loss (rest) is taken
// for those segments only when it is fewer than the TCP runs lost (they
// lost at least one packet); more, and something else is missing: it
// stays unaccounted.
func GSOSegments(reps []*report.Report, rest int64) (report.Drop, bool) {
	var lost int64
	var runs []string
	for _, r := range reps {
		if r.TCP != nil && r.TCP.Losses.Lost > 0 {
			lost += r.TCP.Losses.Lost
			runs = append(runs, r.Traffic)
		}
	}
	if rest <= 0 || rest >= lost {
		return report.Drop{}, false
	}
	return report.Drop{Place: "more segments than packets (GSO) in the drops above", Packets: uint64(rest),
		Cause: fmt.Sprintf("TCP run %s lost %d data segments (TCP_INFO) in %d of the packets counted above: a GSO packet of several segments is counted once",
			strings.Join(runs, ", "), lost, lost-rest),
		Counted: "the aggregate's loss less the packets its counters dropped, fewer than the segments the TCP runs lost"}, true
}

// TCPFilled is the first TCP run whose flows found a shaper or a link
// that dropped them, nil when none did.
func TCPFilled(reps []*report.Report) *report.Report {
	for _, r := range reps {
		if r.TCP != nil && (r.Verdict.Limit == "shaper" || r.Verdict.Limit == "link") {
			return r
		}
	}
	return nil
}

// FirstUDP is the first UDP run of reps, nil when all are TCP runs.
func FirstUDP(reps []*report.Report) *report.Report {
	if i := slices.IndexFunc(reps, func(r *report.Report) bool { return r.TCP == nil }); i >= 0 {
		return reps[i]
	}
	return nil
}

// SenderNodes names the nodes the runs send from, each once, in the runs'
// order.
func SenderNodes(reps []*report.Report) []string {
	var out []string
	for _, r := range reps {
		if node, _, _ := strings.Cut(r.From, ":"); !slices.Contains(out, node) {
			out = append(out, node)
		}
	}
	return out
}

// UnionDrops names the drops of the streams' paths, each counter once.
func UnionDrops(reps []*report.Report) (out, added []report.Drop) {
	seen := map[string]bool{}
	in, outOf := map[string]int64{}, map[string]int64{} // transit node -> run packets in, out
	copier := map[string]report.HopCounters{}           // transit node -> an egress whose impairment duplicates
	counted := map[string]bool{}
	for _, r := range reps {
		h := r.Hops
		if h[0].Duplicates != "" { // a sender's copies: its own report names them (no two runs share a sender)
			for _, d := range r.Added {
				if d.Place == "impairment of "+h[0].String() {
					added = append(added, d)
				}
			}
		}
		for k := 0; k+1 < len(h); k++ {
			a, b := h[k], h[k+1]
			if !IsOut(a.Role) || !IsIn(b.Role) {
				continue
			}
			link := fmt.Sprintf("link %s -> %s", a.Target, b.Target)
			if seen[link] {
				continue
			}
			seen[link] = true
			out = append(out, QdiscPlaces(a)...)
			out = append(out, linkDrop(a, b)...)
			if transitOut(a.Role) && !counted[a.String()+" tx"] {
				counted[a.String()+" tx"] = true
				if a.Duplicates != "" {
					copier[a.Node] = a
				}
				outOf[a.Node] += int64(a.TxPackets-b.Neighbour) + int64(EgressLoss(a))
			}
			if transitIn(b.Role) && !counted[b.String()+" rx"] {
				counted[b.String()+" rx"] = true
				in[b.Node] += int64(b.RxPackets - b.Neighbour)
			}
		}
	}
	for _, node := range slices.Sorted(maps.Keys(in)) {
		counted := fmt.Sprintf("the streams brought %d into %s and it sent on or dropped at its egresses %d", in[node], node, outOf[node])
		inside := in[node] - outOf[node]
		if x, ok := copier[node]; ok && inside < 0 {
			added = append(added, CopiesAt(x, uint64(-inside), counted))
		} else if inside > 0 {
			out = append(out, report.Drop{Place: "inside node " + node, Packets: uint64(inside), Node: node, Counted: counted})
		}
	}
	return out, added
}

// linkDrop is the drop of one link, counted once (as pathDrops does).
func linkDrop(a, b report.HopCounters) []report.Drop {
	n := max(a.TxDropped, b.RxDropped+b.RxMissed)
	if n == 0 {
		return nil
	}
	return []report.Drop{{Place: fmt.Sprintf("link %s -> %s", a.Target, b.Target), Packets: n, Node: b.Node,
		Counted: fmt.Sprintf("%s tx_dropped %d, %s rx_dropped %d (the same packets, counted once)", a.Target, a.TxDropped, b.Target, b.RxDropped+b.RxMissed)}}
}

func transitIn(role string) bool { return role == "ingress" || role == "switch in" }

func transitOut(role string) bool { return role == "egress" || role == "switch out" }

// Overlap is how long all the streams' engines ran at once, and the span
// from the first start to the last end.
func Overlap(reps []*report.Report) (both, span time.Duration) {
	first, last := reps[0].Started, reps[0].Ended
	latestStart, earliestEnd := first, last
	for _, r := range reps[1:] {
		if r.Started.Before(first) {
			first = r.Started
		}
		if r.Ended.After(last) {
			last = r.Ended
		}
		if r.Started.After(latestStart) {
			latestStart = r.Started
		}
		if r.Ended.Before(earliestEnd) {
			earliestEnd = r.Ended
		}
	}
	return max(earliestEnd.Sub(latestStart), 0), last.Sub(first)
}

// LastWord is the last space-separated word of s.
func LastWord(s string) string { return s[strings.LastIndex(s, " ")+1:] }
