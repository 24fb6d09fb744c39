package account

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/report"
)

// The verdict: what limited a run, from what was measured in it. Loss
// points at where the packets dropped and at whatever runs on the CPU
// whose backlog overflowed; without loss the run was limited by its
// offered rate, by a shaper whose queue held it back, by a node that held
// the sender back, or by the sender.

// Judge sets the report's verdict.
func Judge(r *report.Report, p Placement, sentPPS float64) {
	var v report.Verdict
	switch {
	case len(r.LostHosts) > 0:
		var ev []string
		for _, l := range r.LostHosts {
			ev = append(ev, fmt.Sprintf("host %s stopped answering during the run (%s): its hops were counted up to its last reading", l.Host, l.Why))
		}
		v = report.Verdict{Limit: "unknown", Evidence: ev}
	case r.Unaccount > 0:
		v = report.Verdict{Limit: "unknown", Evidence: []string{fmt.Sprintf("the accounting does not balance: %d packets lost without a counter that names them", r.Unaccount)}}
	case r.Unaccount < 0:
		v = report.Verdict{Limit: "unknown", Evidence: []string{fmt.Sprintf("the accounting does not balance: the receiver counted %d packets more than were sent and named as added, less the named drops", -r.Unaccount)}}
		v.Evidence = append(v.Evidence, loops(r)...)
	case r.NamedDrops > 0: // the loss, balanced (copies an impairment added may hide it)
		v = lossVerdict(r, p)
	default:
		v = noLossVerdict(r, p, sentPPS)
	}
	if v.Host == "" {
		v.Host = hostOf(r, v.Node)
	}
	r.Verdict = v
	r.Bottleneck = v.Line()
}

// loops names, for a run whose named drops exceed its loss, each router
// whose IP layer counted header errors (InHdrErrors, where a packet whose
// TTL ran out is counted): the sign of a routing loop while the routes
// changed, whose packets entered the routers of the loop more than once
// and were counted at each entry.
func loops(r *report.Report) []string {
	var out []string
	for _, rc := range r.Routers {
		if n := rc.Discards["InHdrErrors"] + rc.Discards["Ip6InHdrErrors"]; n > 0 {
			out = append(out, fmt.Sprintf("a routing loop, by router %s's IP MIB: %d header errors (InHdrErrors, where a packet whose TTL ran out is counted); a packet that goes round a loop enters its routers more than once and is counted at each entry", rc.Node, n))
		}
	}
	return out
}

// hostOf is the host of node in a run that read hops on several hosts
// ("" otherwise).
func hostOf(r *report.Report, node string) string {
	for _, h := range r.Hops {
		if h.Node == node && h.Host != "" {
			return h.Host
		}
	}
	return ""
}

// qdiscEvidence is what a qdisc's drops say: by what, and why.
func qdiscEvidence(d report.Drop) string {
	what, why, ok := strings.Cut(d.Cause, " dropped them: ")
	if !ok { // an impairment's: "impairment tbf rate 10Mbit limit 1000: queue of 1000 full ..."
		what, why, _ = strings.Cut(d.Cause, ": ")
		what = "its " + what
	}
	return fmt.Sprintf("%d dropped by %s: %s", d.Packets, what, why)
}

// lossVerdict blames the place that dropped the most.
func lossVerdict(r *report.Report, p Placement) report.Verdict {
	worst := r.Drops[0]
	for _, d := range r.Drops[1:] {
		if d.Packets > worst.Packets {
			worst = d
		}
	}
	role := RoleOf(r, worst.Node)
	if _, iface, ok := strings.Cut(worst.Place, "qdisc of "); ok {
		return report.Verdict{Limit: "link", Node: iface, Evidence: []string{qdiscEvidence(worst)}}
	}
	if where, ok := strings.CutPrefix(worst.Place, "on "); ok && worst.Node == "" {
		// One place, not a list of nodes: no comma, so the limit stays singular.
		where = strings.Replace(where, ", or ", " or ", 1)
		return report.Verdict{Limit: "other host", Node: where, Evidence: []string{fmt.Sprintf("%d lost there; its counters are on that host, not read from here", worst.Packets)}}
	}
	if strings.HasPrefix(worst.Place, "underlay ") {
		return report.Verdict{Limit: "underlay", Node: strings.TrimPrefix(worst.Place, "underlay "), Evidence: []string{fmt.Sprintf("%d lost between the VXLAN ends", worst.Packets), worst.Counted}}
	}
	if v, ok := remoteVerdict(r); ok {
		return v
	}
	if strings.HasPrefix(worst.Place, "inside ") {
		return report.Verdict{Limit: role, Node: worst.Node, Evidence: []string{fmt.Sprintf("%d dropped inside it", worst.Packets), worst.Cause}}
	}
	var cpus []int
	var ev []string
	for _, s := range r.Softnet {
		if s.Dropped > 0 {
			cpus = append(cpus, s.CPU)
		}
	}
	if len(cpus) == 0 && p.NAPI[worst.Node] {
		set := p.ByNode[worst.Node]
		ev = append(ev, CPUEvidence(r, set[0]), fmt.Sprintf("%d dropped at its full NAPI ring", worst.Packets))
		return report.Verdict{Limit: role, Node: worst.Node, CPUs: set, Evidence: ev}
	}
	if len(cpus) == 0 {
		return report.Verdict{Limit: "link", Node: worst.Place[len("link "):], Evidence: []string{fmt.Sprintf("%d dropped", worst.Packets), worst.Cause}}
	}
	for _, c := range cpus {
		ev = append(ev, CPUEvidence(r, c))
	}
	for _, s := range r.Softnet {
		if s.Dropped > 0 {
			ev = append(ev, fmt.Sprintf("%d backlog drops on cpu%d", s.Dropped, s.CPU))
		}
	}
	stall := stallEvidence(r, cpus)
	if stall != "" {
		ev = append(ev, stall)
	}
	// The node placed on the CPUs that dropped is the one that could not
	// keep up; without placement, the node the drops were entering.
	for node, set := range p.ByNode {
		if slices.ContainsFunc(cpus, set.Contains) {
			return report.Verdict{Limit: RoleOf(r, node), Node: node, CPUs: cpus, Evidence: ev, Bursts: stall != ""}
		}
	}
	ev = append(ev, fmt.Sprintf("no placement: %s's receive work ran where the kernel put it", worst.Node))
	return report.Verdict{Limit: role, Node: worst.Node, CPUs: cpus, Evidence: ev, Bursts: stall != ""}
}

// remoteVerdict blames, in a run whose hops on several hosts were read,
// the node that dropped the most (its ingress, inside and egress
// together) when that node is on another host than the sender's: this
// host's CPUs and softnet say nothing of it; its counters do, and its own
// host's CPUs as that host's agent read them.
func remoteVerdict(r *report.Report) (report.Verdict, bool) {
	type at struct{ node, host string }
	by, worst := map[at]uint64{}, at{}
	var places []string
	for _, d := range r.Drops {
		if d.Node == "" || d.Host == "" {
			continue
		}
		k := at{d.Node, d.Host}
		if by[k] += d.Packets; by[k] > by[worst] {
			worst = k
		}
	}
	if worst.host == "" || worst.host == r.Hops[0].Host {
		return report.Verdict{}, false
	}
	for _, d := range r.Drops {
		if d.Node == worst.node && d.Host == worst.host {
			places = append(places, fmt.Sprintf("%d %s (%s)", d.Packets, d.Place, d.Counted))
		}
	}
	ev := fmt.Sprintf("%d of the run's packets dropped on its way through it: %s; ", by[worst], strings.Join(places, ", "))
	if u := otherHost(r, worst.host); u != nil {
		ev += hostEvidence(*u)
	} else {
		ev += fmt.Sprintf("its CPUs are host %s's, not read from here", worst.host)
	}
	return report.Verdict{Limit: RoleOf(r, worst.node), Node: worst.node, Host: worst.host, Evidence: []string{ev}}, true
}

// hostEvidence is what another host's CPUs, read by its agent, say of a
// node there that dropped the run's packets: each CPU whose backlog
// overflowed, with its time; else that none did, and the busiest CPU.
func hostEvidence(u report.HostUse) string {
	var parts []string
	for _, s := range u.Softnet {
		if s.Dropped > 0 {
			parts = append(parts, fmt.Sprintf("%s, %d backlog drops", cpuEvidence(u.CPU, s.CPU), s.Dropped))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no backlog drops")
		if len(u.CPU) > 0 {
			busiest := slices.MaxFunc(u.CPU, func(a, b report.CPUUse) int { return cmp.Compare(a.Busy(), b.Busy()) })
			parts = append(parts, "the busiest "+cpuEvidence(u.CPU, busiest.N))
		}
	}
	return fmt.Sprintf("on host %s: %s", u.Host, strings.Join(parts, ", "))
}

// stallEvidence says, when the CPUs that dropped were far from busy (under
// 60%), that the drops came in bursts, and how long the CPU would have to
// stop for the backlog to fill at the run's rate (on a virtual machine, a
// vCPU the hypervisor does not run).
func stallEvidence(r *report.Report, cpus []int) string {
	busy := BusyOf(r, cpus)
	backlog, err := strconv.Atoi(r.Env.Sysctls["net.core.netdev_max_backlog"])
	if busy >= 60 || err != nil || r.Elapsed <= 0 || r.Sent == 0 {
		return ""
	}
	pps := float64(r.Sent) / r.Elapsed.Seconds()
	return fmt.Sprintf("not saturated, so the drops came in bursts: at %.0f pps a backlog of %d fills in %.1f ms while the CPU processes nothing",
		pps, backlog, 1e3*float64(backlog)/pps)
}

// noLossVerdict: nothing dropped, so the rate was set by the offered rate,
// by a node that held the sender back, or by the sender itself.
func noLossVerdict(r *report.Report, p Placement, sentPPS float64) report.Verdict {
	threads := max(1, len(r.Result.Threads))
	// A paced thread that did not run (a stalled CPU) gave up schedule
	// time rather than bursting: over the time it ran it offered the rate.
	ranPPS, behind := sentPPS, r.Result.Behind
	if behind > 0 && behind < r.Elapsed {
		ranPPS = sentPPS * r.Elapsed.Seconds() / (r.Elapsed - behind).Seconds()
	}
	if offered := float64(r.OfferedPPS) * float64(threads); offered > 0 && ranPPS >= 0.98*offered {
		ev := []string{fmt.Sprintf("the path carried the %.0f pps offered and dropped nothing", offered)}
		if behind > 0 {
			ev = append(ev, fmt.Sprintf("a sending thread was off its CPU for %v of its schedule, so %.0f pps were offered over the run", behind.Round(time.Microsecond), sentPPS))
		}
		return report.Verdict{Limit: "offered rate", Evidence: ev}
	}
	if v, ok := shaperVerdict(r); ok {
		return v
	}
	senders := SenderCPUs(r, p)
	senderIdle := IdleOf(r, senders)
	for node, set := range p.ByNode {
		if BusyOf(r, set) >= 95 && senderIdle >= 10 {
			ev := []string{CPUEvidence(r, set[0]), fmt.Sprintf("the sender's CPUs were %.0f%% idle: held back, nothing dropped", senderIdle)}
			return report.Verdict{Limit: RoleOf(r, node), Node: node, CPUs: set, Evidence: ev}
		}
	}
	var ev []string
	for _, c := range senders {
		ev = append(ev, CPUEvidence(r, c))
	}
	if b := r.Result.Behind; b > 0 {
		ev = append(ev, fmt.Sprintf("a sending thread was off its CPU for %v of its schedule and went on without a burst", b.Round(time.Microsecond)))
	}
	return report.Verdict{Limit: "sender", Node: r.Path[0].Node, CPUs: senders, Evidence: append(ev, "the path dropped nothing")}
}

// shaperVerdict: a run that lost nothing and delivered what a shaper on
// its path lets through (90% of its rate or more) ran at that shaper's
// rate: the packets waited in its queue and the sender waited for them
// (on its own interface: its socket's buffer was full). The evidence is
// the rate carried, the queue's depth in the run's samples and the
// waiting that depth adds at the shaper's rate.
func shaperVerdict(r *report.Report) (report.Verdict, bool) {
	pps := r.SteadyPPS
	if pps <= 0 {
		pps = r.PPS
	}
	frame := float64(r.Frame)
	if r.MeanFrame > 0 {
		frame = r.MeanFrame
	}
	bytes := frame - 4 // what a qdisc counts: the frame without its FCS
	carried := pps * bytes * 8
	for i, t := range r.Targets {
		rate := float64(r.Shapers[t.String()])
		if rate == 0 || carried < 0.9*rate {
			continue
		}
		ev := []string{fmt.Sprintf("%s: carried %.2f Mbit/s, %.0f%% of its rate", r.Env.Impairments[t.String()], carried/1e6, 100*carried/rate)}
		if most, mean, n := queueDepth(r, i); n > 0 {
			ev = append(ev, fmt.Sprintf("its queue held up to %d packets (mean %.0f in %d samples): up to %.2f ms of waiting", most, mean, n, 1e3*float64(most)*bytes*8/rate))
		}
		return report.Verdict{Limit: "shaper", Node: t.String(), Evidence: append(ev, "the path dropped nothing")}, true
	}
	return report.Verdict{}, false
}

// queueDepth is the most and the mean of the packets target i's qdisc held
// in the samples taken while the run's packets were on their way (while
// the engine sent, or until the receiver's last packet when a queue made
// it later), and how many there were.
func queueDepth(r *report.Report, i int) (most uint64, mean float64, n int) {
	var sum uint64
	window := max(r.Elapsed, r.ReceiveWindow)
	for _, s := range r.Samples {
		if s.At > r.Samples[0].At+window || i >= len(s.Counters) {
			continue
		}
		q := s.Counters[i].QdiscQueued
		most, sum, n = max(most, q), sum+q, n+1
	}
	if n > 0 {
		mean = float64(sum) / float64(n)
	}
	return most, mean, n
}

// SenderCPUs are the sender's pinned CPUs; an unpinned sender (and on
// veth everything it drives) ran where the kernel put it: every CPU more
// than a fifth busy, the busiest first.
func SenderCPUs(r *report.Report, p Placement) []int {
	if len(p.Sender) > 0 {
		return p.Sender
	}
	byBusy := append([]report.CPUUse(nil), r.CPU...)
	slices.SortStableFunc(byBusy, func(a, b report.CPUUse) int { return cmp.Compare(b.Busy(), a.Busy()) })
	var out []int
	for i, c := range byBusy {
		if i == 0 || c.Busy() > 20 {
			out = append(out, c.N)
		}
	}
	return out
}

// RoleOf names a node's part in the run's path.
func RoleOf(r *report.Report, node string) string {
	for i, h := range r.Path {
		if h.Node != node {
			continue
		}
		switch {
		case i == 0:
			return "sender"
		case i == len(r.Path)-1:
			return "receiver"
		case h.L2:
			return "switch"
		}
		return "router"
	}
	return "node"
}

// CPUEvidence is "cpu1 98% softirq" for a CPU of this host taken by one
// kind of work, else "cpu1 70% busy (36% softirq, 30% sys)".
func CPUEvidence(r *report.Report, n int) string { return cpuEvidence(r.CPU, n) }

// cpuEvidence is CPUEvidence for CPU n of cpus (one host's).
func cpuEvidence(cpus []report.CPUUse, n int) string {
	for _, c := range cpus {
		if c.N != n {
			continue
		}
		kinds := []struct {
			name string
			v    float64
		}{{"softirq", c.SoftIRQ}, {"sys", c.System}, {"usr", c.User}, {"irq", c.IRQ}, {"steal", c.Steal}}
		slices.SortStableFunc(kinds, func(a, b struct {
			name string
			v    float64
		}) int {
			return cmp.Compare(b.v, a.v)
		})
		// Whose work it was: what the placement put on the CPU (every
		// CPU's time is machine-wide, the kernel's and every process's).
		cpu := fmt.Sprintf("cpu%d", n)
		if len(c.Roles) > 0 {
			cpu += " of " + strings.Join(c.Roles, ", ") + ":"
		}
		if kinds[0].v >= 80 {
			return fmt.Sprintf("%s %.0f%% %s", cpu, kinds[0].v, kinds[0].name)
		}
		var parts []string
		for _, k := range kinds[:2] {
			if k.v >= 5 {
				parts = append(parts, fmt.Sprintf("%.0f%% %s", k.v, k.name))
			}
		}
		return fmt.Sprintf("%s %.0f%% busy (%s)", cpu, c.Busy(), strings.Join(parts, ", "))
	}
	return fmt.Sprintf("cpu%d", n)
}

func BusyOf(r *report.Report, cpus []int) float64 {
	var sum float64
	for _, n := range cpus {
		for _, c := range r.CPU {
			if c.N == n {
				sum += c.Busy()
			}
		}
	}
	if len(cpus) == 0 {
		return 0
	}
	return sum / float64(len(cpus))
}

func IdleOf(r *report.Report, cpus []int) float64 {
	if len(cpus) == 0 {
		return 0
	}
	return 100 - BusyOf(r, cpus)
}
