// Package account is a bench's accounting and verdict, from what a run
// measured: every packet the sender took either counted by the receiver
// or dropped at a named place (a link, a node's inside, a qdisc), each
// drop's cause from the machine's counters, what each router did, the
// impairments' fidelity, the drops of runs measured together counted
// once, and what limited the run. It reads reports and counters and
// touches no kernel.
package account

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nslab/nslab/topology/xdpfwd"

	"github.com/nslab/nslab/internal/units"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/qdisc"
)

// Accounting: every packet the sender interface took is either counted by
// the receiver or dropped at a named place. A place is a link (the packets
// the sending end's tx_dropped and the receiving end's rx_dropped both
// count: the same packets, once) or the inside of a node on the path
// (what entered and never reached its egress).

// RxRun is what hop i received of the run and handed on: its rx less
// neighbour frames, and less what it dropped when its rx counts those.
func RxRun(h []report.HopCounters, i int) uint64 {
	n := h[i].RxPackets - h[i].Neighbour
	if h[i].RxIncludesDropped {
		n -= min(n, h[i].RxDropped+h[i].RxMissed)
	}
	return n
}

// TxRun is what hop i sent on of the run: its tx less the neighbour frames
// its peer (the next hop, on a path) received from it. Before a hop on
// another host, or hops not read at all, its own count of the control
// frames it sent stands in for the peer's: the peer's host reads its
// counters at another moment, and a hello sent between the two readings
// would be counted by one host and not the other.
func TxRun(h []report.HopCounters, i int) uint64 {
	switch {
	case i+1 < len(h) && acrossHosts(h[i], h[i+1]):
		return h[i].TxPackets - h[i].SentControl
	case i+1 < len(h) && IsIn(h[i+1].Role):
		return h[i].TxPackets - h[i+1].Neighbour
	}
	return h[i].TxPackets
}

// acrossHosts reports whether hop b, which follows a on the path, is read
// on another host than a, or after hops not read at all (b.After).
func acrossHosts(a, b report.HopCounters) bool { return b.After != "" || a.Host != b.Host }

func IsIn(role string) bool  { return role == "ingress" || role == "receiver" || role == "switch in" }
func IsOut(role string) bool { return role == "sender" || role == "egress" || role == "switch out" }

// Balance fills the counts, drops, added packets and balance of the
// report.
func Balance(r *report.Report, res *engine.Result, frame int) {
	h := r.Hops
	last := len(h) - 1
	r.SenderCheck = report.SenderCheck{EngineHanded: res.Handed(), EngineSent: res.Sent, EngineErrors: res.Errors}
	r.Sent = res.Handed()
	r.Drops, r.Added = nil, nil
	if h[0].Role == "sender" {
		r.Sent = Took(h[0]) - controlSent(h)
		if copies := reconcile(&r.SenderCheck, h[0], controlSent(h)); copies > 0 {
			r.Sent = res.Handed() // the interface counts the copies too
			r.Added = append(r.Added, CopiesAt(h[0], copies, fmt.Sprintf("%s took %d, the engine handed it %d", h[0].Target, r.SenderCheck.Interface, res.Handed())))
		}
	}
	r.Received = RxRun(h, last)
	r.Loss = int64(r.Sent) - int64(r.Received)
	if r.Sent > 0 {
		r.LossPct = 100 * float64(r.Loss) / float64(r.Sent)
	}
	if h[0].Role == "sender" {
		drops, added := PathDrops(h, frame)
		r.Drops, r.Added = drops, append(r.Added, added...)
	} else {
		r.Drops = measuredDrops(h)
	}
	r.NamedDrops, r.NamedAdded = Total(r.Drops), Total(r.Added)
	r.Unaccount = r.Loss + int64(r.NamedAdded) - int64(r.NamedDrops)
}

// Total is the packets of places.
func Total(places []report.Drop) uint64 {
	var n uint64
	for _, d := range places {
		n += d.Packets
	}
	return n
}

// CopiesAt names the copies the impairment of interface x sent.
func CopiesAt(x report.HopCounters, n uint64, counted string) report.Drop {
	return report.Drop{Place: "impairment of " + x.String(), Packets: n, Node: x.Node, Counted: counted,
		Cause: fmt.Sprintf("its impairment (%s) sends copies of packets it is handed", x.Duplicates)}
}

// controlSent is what the sender interface sent that is not the run's:
// the neighbour and IPv6 control frames (ARP, ND, MLD) its peer received.
func controlSent(h []report.HopCounters) uint64 {
	switch {
	case len(h) > 1 && acrossHosts(h[0], h[1]):
		return h[0].SentControl
	case len(h) > 1 && IsIn(h[1].Role):
		return h[1].Neighbour
	}
	return 0
}

// reconcile compares the engine's count with the sender interface's (less
// the control frames it sent) and says what the difference is, from its
// sign and the interface's impairment. It returns the copies the
// interface's impairment sent, when it duplicates and took more.
func reconcile(c *report.SenderCheck, sender report.HopCounters, control uint64) (copies uint64) {
	c.Interface = Took(sender) - control
	c.Difference = int64(c.Interface) - int64(c.EngineHanded)
	switch {
	case c.Difference > 0 && sender.Duplicates != "":
		c.Cause = fmt.Sprintf("%s took %d packets more than the engine handed it: copies its impairment (%s) sent; the report counts the engine's and names the copies as added", sender.Target, c.Difference, sender.Duplicates)
		return uint64(c.Difference)
	case c.Difference > 0:
		c.Cause = fmt.Sprintf("%s took %d packets more than the engine handed it: traffic of its namespace that is not the run's (the interface counts every packet sent on it)", sender.Target, c.Difference)
	case c.Difference < 0:
		c.Cause = fmt.Sprintf("the engine counted %d packets more than %s took: the engine's count is wrong; the report counts the interface's", -c.Difference, sender.Target)
	}
	return 0
}

// Took is what an interface took to send: what its device sent and
// dropped, and what its own qdisc (an impairment) dropped or still holds.
func Took(h report.HopCounters) uint64 {
	return h.TxPackets + EgressLoss(h)
}

// EgressLoss is what an interface took to send and did not: its device
// dropped it, or its own qdisc dropped it or still holds it.
func EgressLoss(h report.HopCounters) uint64 {
	return h.TxDropped + h.QdiscDrops + h.QdiscQueued
}

// QdiscPlaces names what an interface's own qdisc dropped, and what it
// still held when the run was read (the path delays it; it is not lost).
func QdiscPlaces(x report.HopCounters) []report.Drop {
	var out []report.Drop
	if x.QdiscDrops > 0 {
		out = append(out, report.Drop{Place: "qdisc of " + x.String(), Packets: x.QdiscDrops, Node: x.Node, Host: x.Host,
			Counted: "the qdisc's drop counter: " + QdiscCounts(x)})
	}
	if x.QdiscQueued > 0 {
		out = append(out, report.Drop{Place: "still queued in the qdisc of " + x.String(), Packets: x.QdiscQueued, Node: x.Node, Host: x.Host,
			Counted: fmt.Sprintf("the qdisc held %d packets (%d bytes) when the run was read", x.QdiscQueued, x.QdiscBacklog)})
	}
	return out
}

// QdiscCounts says an interface's qdisc counters over the run: its drops,
// the times its rate held a packet back (overlimits) and its backlog at
// the end.
func QdiscCounts(x report.HopCounters) string {
	s := fmt.Sprintf("%d dropped", x.QdiscDrops)
	if x.QdiscOverlimits > 0 {
		s += fmt.Sprintf(", %d overlimits (times its rate held a packet back)", x.QdiscOverlimits)
	}
	return s + fmt.Sprintf(", backlog %d packets (%d bytes) at the end", x.QdiscQueued, x.QdiscBacklog)
}

// PathDrops names the drops along a path: in each sending interface's own
// qdisc, per link, and inside each node between its ingress and egress;
// and the packets a node's egress added (its impairment's copies: more
// left than entered).
func PathDrops(h []report.HopCounters, frame int) (out, added []report.Drop) {
	for i := 0; i+1 < len(h); i++ {
		a, b := h[i], h[i+1]
		if IsOut(a.Role) {
			out = append(out, QdiscPlaces(a)...)
		}
		switch {
		case IsOut(a.Role) && IsIn(b.Role) && (b.After != "" || a.Host != b.Host):
			out = append(out, gapDrops(h, i)...)
		case IsOut(a.Role) && IsIn(b.Role):
			n := max(a.TxDropped, b.RxDropped+b.RxMissed)
			if n > 0 {
				out = append(out, report.Drop{Place: fmt.Sprintf("link %s -> %s", a.Target, b.Target), Packets: n, Node: b.Node, Host: b.Host,
					Counted: fmt.Sprintf("%s tx_dropped %d, %s rx_dropped %d (the same packets, counted once)", a.Target, a.TxDropped, b.Target, b.RxDropped+b.RxMissed)})
			}
		case IsIn(a.Role) && IsOut(b.Role) && a.Node == b.Node:
			egress := TxRun(h, i+1) + EgressLoss(b) + b.Detour
			inside := int64(RxRun(h, i)+a.Joined) - int64(egress)
			counted := fmt.Sprintf("%s received %d, %s took %d", a.Target, RxRun(h, i), b.Target, egress)
			if a.Joined+b.Detour > 0 {
				counted = fmt.Sprintf("%s received %d and interfaces off the path %d; %s took %d and interfaces off the path %d",
					a.Target, RxRun(h, i), a.Joined, b.Target, egress-b.Detour, b.Detour)
			}
			switch {
			case inside > 0:
				out = append(out, report.Drop{Place: "inside " + nodeKind(a.Role) + " " + a.Node, Packets: uint64(inside), Node: a.Node, Host: a.Host, Counted: counted})
			case inside < 0 && b.Duplicates != "":
				added = append(added, CopiesAt(b, uint64(-inside), counted))
			}
		}
	}
	return out, added
}

// gapDrops names the drops between hop i, which sends to another host,
// and hop i+1, which receives from it: at each end by its own counters,
// and between them what left hop i and never reached hop i+1. That is on
// the underlay between the two hosts when both ends were read (a link
// between hosts), and on the hops b.After names or the underlay when
// those hops were not read from here (their counters are there).
func gapDrops(h []report.HopCounters, i int) []report.Drop {
	a, b := h[i], h[i+1]
	var out []report.Drop
	if a.TxDropped > 0 {
		out = append(out, report.Drop{Place: "at " + a.String(), Packets: a.TxDropped, Node: a.Node, Host: a.Host, Counted: fmt.Sprintf("%s tx_dropped %d", a.Target, a.TxDropped)})
	}
	arrived := RxRun(h, i+1) + b.RxDropped + b.RxMissed
	if lost := int64(TxRun(h, i)) - int64(arrived); lost > 0 {
		d := report.Drop{Place: "on " + b.After + ", or the underlay between", Packets: uint64(lost),
			Counted: fmt.Sprintf("%s sent %d of the run, %d reached %s (counted there: rx and rx_dropped)", a.Target, TxRun(h, i), arrived, b.Target)}
		if b.After == "" {
			d.Place = fmt.Sprintf("underlay from host %s to host %s (link %s -> %s)", a.Host, b.Host, a.Target, b.Target)
			d.Counted = fmt.Sprintf("%s on host %s sent %d of the run, %d reached %s on host %s (rx and rx_dropped)", a.Target, a.Host, TxRun(h, i), arrived, b.Target, b.Host)
		}
		out = append(out, d)
	}
	if n := b.RxDropped + b.RxMissed; n > 0 {
		out = append(out, report.Drop{Place: "at " + b.String(), Packets: n, Node: b.Node, Host: b.Host, Counted: fmt.Sprintf("%s rx_dropped %d", b.Target, n)})
	}
	return out
}

func nodeKind(inRole string) string {
	if inRole == "switch in" {
		return "switch"
	}
	return "router"
}

// measuredDrops names, for interfaces given with --measure, every drop
// counter that moved (they need not be a path).
func measuredDrops(h []report.HopCounters) []report.Drop {
	var out []report.Drop
	for _, x := range h {
		if n := x.TxDropped + x.RxDropped + x.RxMissed; n > 0 {
			out = append(out, report.Drop{Place: "at " + x.String(), Packets: n, Node: x.Node,
				Counted: fmt.Sprintf("tx_dropped %d, rx_dropped %d, rx_missed %d", x.TxDropped, x.RxDropped, x.RxMissed)})
		}
		out = append(out, QdiscPlaces(x)...)
	}
	return out
}

// ExplainDrops adds what the machine's counters say about each drop: the
// softnet drops of the run (backlog drops, per CPU), the IP MIB discards
// of a router, a frame larger than the receiving MTU (mtu and qdiscs: by
// target, as "ns2:veth1-peer").
func ExplainDrops(r *report.Report, frame int, mtu map[string]int, qdiscs map[string]*qdisc.State, p Placement) {
	backlog, where := backlogDrops(r.Softnet)
	var linkDrops uint64
	for _, d := range r.Drops {
		if strings.HasPrefix(d.Place, "link ") {
			linkDrops += d.Packets
		}
	}
	for i := range r.Drops {
		d := &r.Drops[i]
		switch {
		case strings.HasPrefix(d.Place, "link "):
			d.Cause = linkCause(*d, backlog, linkDrops, where, frame, mtu, p)
		case strings.HasPrefix(d.Place, "inside "):
			d.Cause = discardsOf(r, d.Node) + ConntrackCause(r, d.Node)
		case strings.HasPrefix(d.Place, "qdisc of "):
			d.Cause = qdiscCause(qdiscs[strings.TrimPrefix(d.Place, "qdisc of ")])
		case strings.HasPrefix(d.Place, "at ") && d.Host != "":
			d.Cause = hostBacklogCause(r, d.Host)
		case strings.HasPrefix(d.Place, "still queued in the qdisc of "):
			d.Cause = "not lost: the impairment still held them when the run was read (a queue that drains slower than nslab waits)"
		}
	}
}

// linkCause is what softnet_stat (backlog, by CPU in where) says of a
// drop on a link of this host, the links' drops being linkDrops: a full
// backlog, a full NAPI ring of a placed node, or a frame larger than the
// receiving MTU (mtu: by target).
func linkCause(d report.Drop, backlog, linkDrops uint64, where []string, frame int, mtu map[string]int, p Placement) string {
	switch {
	case backlog > 0 && backlog >= linkDrops:
		return fullBacklog("", backlog, linkDrops, where, "the links")
	case backlog == 0 && p.NAPI[d.Node]:
		return fmt.Sprintf("%s's NAPI ring was full: its napi kthreads on cpu %s did not keep up (veth drops there; softnet_stat counted no backlog drops)", d.Node, p.ByNode[d.Node])
	case backlog == 0:
		cause := "not backlog drops (softnet_stat counted none)"
		to := d.Place[strings.LastIndex(d.Place, " ")+1:]
		if m := mtu[to]; m > 0 && frame-engine.FCS-14 > m {
			cause += fmt.Sprintf(": a %d-byte frame carries %d bytes of IP, more than %s's MTU %d", frame, frame-engine.FCS-14, to, m)
		}
		return cause
	}
	return fmt.Sprintf("softnet_stat counted %d backlog drops in the run (%s), the links %d", backlog, strings.Join(where, ", "), linkDrops)
}

// fullBacklog is the cause of drops the interfaces (whose) counted
// (named) when softnet_stat (whose: "" this host's, or "host b's ")
// counted as many backlog drops (backlog, by CPU in where) or more: a
// full backlog. More is softnet_stat counting every namespace's packets
// on those CPUs (another test's, a daemon's), which keeps the cause: a
// few packets' difference does not make it unknown.
func fullBacklog(whose string, backlog, named uint64, where []string, interfaces string) string {
	if backlog == named {
		return fmt.Sprintf("a full backlog (%ssoftnet_stat: %s, as many as %s)", whose, strings.Join(where, ", "), interfaces)
	}
	// softnet_stat counts every namespace's packets on those CPUs.
	return fmt.Sprintf("a full backlog (%ssoftnet_stat: %s; %s %d)", whose, strings.Join(where, ", "), interfaces, named)
}

// backlogDrops is the backlog drops of softnet (one host's), and where
// ("12 on cpu1").
func backlogDrops(softnet []report.SoftnetCPU) (backlog uint64, where []string) {
	for _, s := range softnet {
		if s.Dropped > 0 {
			backlog += s.Dropped
			where = append(where, fmt.Sprintf("%d on cpu%d", s.Dropped, s.CPU))
		}
	}
	return backlog, where
}

// otherHost is the CPUs of host as its agent read them (nil: not read).
func otherHost(r *report.Report, host string) *report.HostUse {
	if i := slices.IndexFunc(r.OtherHosts, func(u report.HostUse) bool { return u.Host == host }); i >= 0 {
		return &r.OtherHosts[i]
	}
	return nil
}

// hostBacklogCause is what host's softnet_stat says of the drops at its
// interfaces in a run across hosts: this host's own, another's as its
// agent read them ("": not read).
func hostBacklogCause(r *report.Report, host string) string {
	softnet := r.Softnet
	if len(r.Hops) == 0 || host != r.Hops[0].Host {
		u := otherHost(r, host)
		if u == nil {
			return ""
		}
		softnet = u.Softnet
	}
	backlog, where := backlogDrops(softnet)
	var named uint64
	for _, d := range r.Drops {
		if d.Host == host && strings.HasPrefix(d.Place, "at ") {
			named += d.Packets
		}
	}
	switch {
	case backlog == 0:
		return fmt.Sprintf("not backlog drops (host %s's softnet_stat counted none)", host)
	case backlog >= named:
		return fullBacklog("host "+host+"'s ", backlog, named, where, "its interfaces")
	}
	return fmt.Sprintf("host %s's softnet_stat counted %d backlog drops in the run (%s), its interfaces %d", host, backlog, strings.Join(where, ", "), named)
}

// discardsOf says which IP MIB discard counters of node moved.
func discardsOf(r *report.Report, node string) string {
	for _, rt := range r.Routers {
		if rt.Node != node {
			continue
		}
		var parts []string
		keys := make([]string, 0, len(rt.Discards))
		for k := range rt.Discards {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, rt.Discards[k]))
		}
		if len(parts) > 0 {
			return "IP MIB of " + node + ": " + strings.Join(parts, ", ")
		}
		return "no IP MIB discard counter of " + node + " moved"
	}
	return ""
}

// RouterState is one reading of the routers' own counters: each router
// node's IP MIB (Ip: counter -> value), conntrack (nf_conntrack column ->
// value; nil: none) and XDP fast path (none: no fast path).
type RouterState struct {
	MIB, CT map[string]map[string]uint64
	XDP     map[string]xdpfwd.Counts
}

// RouterCounts fills what each router on the path did.
func RouterCounts(r *report.Report, before, after RouterState, ipv6 bool) {
	h := r.Hops
	for i := 0; i+1 < len(h); i++ {
		if h[i].Role != "ingress" || h[i+1].Role != "egress" || h[i].Node != h[i+1].Node {
			continue
		}
		node := h[i].Node
		rc := report.RouterCounts{Node: node, Host: h[i].Host, Entered: RxRun(h, i), Forwarded: TxRun(h, i+1), DroppedAtEgress: EgressLoss(h[i+1]),
			ForwDatagrams: after.MIB[node][kstat.ForwardedKey(ipv6)] - before.MIB[node][kstat.ForwardedKey(ipv6)], Discards: map[string]uint64{}}
		rc.Inside = int64(rc.Entered+h[i].Joined) - int64(rc.Forwarded+rc.DroppedAtEgress+h[i+1].Detour)
		if rc.Inside < 0 && h[i+1].Duplicates != "" {
			rc.DuplicatedAtEgress, rc.Inside = uint64(-rc.Inside), 0
		}
		for _, k := range kstat.IPDiscards {
			if d := after.MIB[node][k] - before.MIB[node][k]; d > 0 {
				rc.Discards[k] = d
			}
		}
		rc.XDP = xdpCounts(before.XDP[node], after.XDP[node])
		r.Routers = append(r.Routers, rc)
		if before.CT[node] != nil && after.CT[node] != nil {
			if ct := ConntrackCounts(node, before.CT[node], after.CT[node]); ct.Moved() {
				r.Conntrack = append(r.Conntrack, ct)
			}
		}
	}
}

// xdpCounts is a router's XDP fast path over the run (nil without one).
func xdpCounts(before, after xdpfwd.Counts) *report.XDPCounts {
	if before == nil || after == nil {
		return nil
	}
	d := after.Sub(before)
	x := &report.XDPCounts{Forwarded: d.Forwarded(), Passed: d.Passed(), Dropped: d.Dropped(), Why: map[string]uint64{}}
	for i, r := range xdpfwd.Reasons[1:] {
		if d[i+1] > 0 {
			x.Why[r] = d[i+1]
		}
	}
	return x
}

// qdiscCause says why an interface's qdisc dropped, from what it does:
// an impairment's loss or full queue, or the queue discipline under it or
// alone.
func qdiscCause(q *qdisc.State) string {
	switch {
	case q == nil:
		return "its qdisc dropped them"
	case q.Impair == nil:
		return fmt.Sprintf("its queue discipline (%s) dropped them: %s", q.Kind, queueWhy(q.Kind))
	}
	m := q.Impair
	var why []string
	if m.Loss > 0 {
		why = append(why, "its loss of "+units.FormatPercent(m.Loss))
	}
	switch {
	case q.Child != "" && m.Rate > 0:
		why = append(why, fmt.Sprintf("its queue (%s) in front of its rate of %s: %s", q.Child, units.FormatBitRate(m.Rate), queueWhy(q.Child)))
	case q.Child != "":
		why = append(why, fmt.Sprintf("or its queue (%s): %s", q.Child, queueWhy(q.Child)))
	case m.Rate > 0:
		why = append(why, fmt.Sprintf("queue of %d full (offered more than %s)", m.QueueLimit(), units.FormatBitRate(m.Rate)))
	default:
		why = append(why, fmt.Sprintf("or its queue of %d packets was full", m.QueueLimit()))
	}
	return fmt.Sprintf("impairment %s: %s", q, strings.Join(why, ", "))
}

// queueWhy is how a queue discipline of this kind drops.
func queueWhy(kind string) string {
	switch kind {
	case "fq_codel", "cake":
		return "full, or CoDel dropped packets that had waited longer than its target"
	case "htb":
		return "its class's queue was full, as more was offered than its rate"
	case "fq":
		return "full (in all, or a flow's share)"
	}
	return "its queue was full"
}
