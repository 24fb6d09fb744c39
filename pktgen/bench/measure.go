package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// measurement is what a bench reads on the lab: the sampled interfaces
// and their roles, the neighbour frame counters of the interfaces that
// receive along the path, the routers' namespaces (for their IP
// counters), and each interface's MTU.
type measurement struct {
	targets    []sample.Target
	roles      []string
	sampler    *sample.Sampler
	neighbours []*sample.Neighbours // nil where a target's rx does not matter
	// gaps names, at the target that receives after hops on other hosts
	// (a lab spanning hosts), those hops; sent counts the control frames
	// the target before such a gap, or before a hop on another host,
	// sends (its peer's counters are read there, at another moment).
	gaps    []string
	sent    []*sample.Neighbours
	routers map[string]*ns.NS
	mtu     map[string]int          // by target ("ns2:veth1-peer")
	qdiscs  map[string]*qdisc.State // by target, for those with a root qdisc of their own
	// hops reads the targets on other hosts (nil: none read), remoteAt
	// is each target's place among them (-1: here), and hopsBase is their
	// neighbour frames, routers' counters and CPUs at the baseline; hopsFinal
	// at the end.
	// vxlan marks the targets that are a VXLAN end of a link between
	// hosts (their rx counts what they drop).
	vxlan               []bool
	hops                *remote.Hops
	remoteAt            []int
	hopsBase, hopsFinal remote.Control
}

// newMeasurement sets up the measurement of a path (or of the interfaces
// given instead, the last being the receiver) for traffic t; with rem,
// the path's hops on other hosts are read through it.
func newMeasurement(r *lab.Running, path *walk.Path, measure []spec.Endpoint, t *spec.Traffic, rem remote.Transport) (*measurement, error) {
	ipv6 := t.To.Is6()
	m := &measurement{routers: map[string]*ns.NS{}, mtu: map[string]int{}, qdiscs: map[string]*qdisc.State{}}
	if len(measure) > 0 {
		for i, ep := range measure {
			if r.Node(ep.Node) == nil {
				return nil, &FieldError{"measure", fmt.Errorf("%s: no node %s in the lab", ep, ep.Node)}
			}
			m.targets = append(m.targets, sample.TargetOf(r.Opened, ep))
			m.roles = append(m.roles, map[bool]string{true: "receiver", false: "measured"}[i == len(measure)-1])
		}
	} else {
		m.targets, m.roles, m.gaps = hopPlan(r.Lab, path, rem != nil)
		for _, node := range routerNodes(path) {
			if r.Lab.Local(node) {
				m.routers[node] = r.Node(node).NS
			}
		}
	}
	m.vxlan = make([]bool, len(m.targets))
	for i, x := range m.targets {
		m.vxlan[i] = betweenHosts(r.Lab.Model(), spec.Endpoint{Node: x.Node, Interface: x.Interface})
	}
	var err error
	if m.hops, m.remoteAt, err = openHops(r, path, m.targets, m.roles, t, rem); err != nil {
		return nil, err
	}
	if m.sampler, err = m.samplerOf(r, m.targets); err != nil {
		m.close()
		return nil, err
	}
	if err := m.openNeighbours(r, ipv6); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// openNeighbours opens a neighbour frame counter on every interface whose
// received packets the accounting uses, and notes every MTU and
// impairment.
func (m *measurement) openNeighbours(r *lab.Running, ipv6 bool) error {
	m.neighbours = make([]*sample.Neighbours, len(m.targets))
	m.sent = make([]*sample.Neighbours, len(m.targets))
	for i, t := range m.targets {
		if m.isRemote(i) {
			continue // its host counts its neighbour frames
		}
		link, err := r.Link(spec.Endpoint{Node: t.Node, Interface: t.Interface})
		if err != nil {
			return err
		}
		m.mtu[t.String()] = link.Attrs().MTU
		st, err := qdisc.Read(r.Node(t.Node).Handle, link)
		if err != nil {
			return err
		}
		if st != nil {
			m.qdiscs[t.String()] = st
		}
		if i+1 < len(m.targets) && ((i+1 < len(m.gaps) && m.gaps[i+1] != "") || m.targets[i+1].Host != t.Host) {
			if m.sent[i], err = sample.CountSentControl(r.Node(t.Node).NS, link.Attrs().Index, ipv6); err != nil {
				return err
			}
		}
		if !account.IsIn(m.roles[i]) && m.roles[i] != "measured" {
			continue
		}
		if m.neighbours[i], err = sample.CountNeighbours(r.Node(t.Node).NS, link.Attrs().Index, ipv6); err != nil {
			return err
		}
	}
	return nil
}

// betweenHosts reports whether interface ep is an end of a link between
// two hosts (a VXLAN interface).
func betweenHosts(l *spec.Lab, ep spec.Endpoint) bool {
	for _, k := range l.Links {
		if k.A == ep || k.B == ep {
			return k.VNI != 0
		}
	}
	return false
}

// samplerOf is a sampler of targets, those on other hosts read through
// the hops there.
func (m *measurement) samplerOf(r *lab.Running, targets []sample.Target) (*sample.Sampler, error) {
	if m.hops != nil {
		return sample.NewSpanning(r.Opened, targets, m.hops)
	}
	return sample.New(r.Opened, targets)
}

// openHops opens, through rem, the targets on other hosts than r's (nil
// when there are none, or no rem): their counters, neighbour frame counts,
// the routers there among the path's, and the receiver's sink when the
// receiver (the last target) is there. remoteAt is each target's place
// among those opened (-1: here).
func openHops(r *lab.Running, p *walk.Path, targets []sample.Target, roles []string, t *spec.Traffic, rem remote.Transport) (*remote.Hops, []int, error) {
	at := make([]int, len(targets))
	var there []sample.Target
	var theirRoles []string
	var across []bool
	for i, x := range targets {
		at[i] = -1
		if rem != nil && x.Host != "" && !r.Lab.Local(x.Node) {
			at[i] = len(there)
			there, theirRoles = append(there, x), append(theirRoles, roles[i])
			across = append(across, i+1 < len(targets) && targets[i+1].Host != x.Host)
		}
	}
	if len(there) == 0 {
		return nil, at, nil
	}
	var sink *remote.Sink
	if last := targets[len(targets)-1]; at[len(targets)-1] >= 0 && t.TCP == nil {
		sink = &remote.Sink{Node: last.Node, Port: t.Flow().Port, IPv6: t.To.Is6()}
	}
	h, err := remote.Open(rem, there, theirRoles, across, routerNodes(p), sink)
	return h, at, err
}

// baseline reads the counters at the start of a run and zeroes the
// neighbour frame counts, at a quiet moment (sample.ReadQuiet): the
// counters here at a moment no control frame passed this host's taps, the
// other hosts' each at such a moment of its own (their agents read them so). The run's
// packets are not on the wire yet, so readings on different hosts at
// different moments still agree on them.
func (m *measurement) baseline() (sample.Sample, error) {
	var s sample.Sample
	if err := sample.ReadQuiet(m.taps(), nil, m.readHere(&s)); err != nil {
		return s, err
	}
	var err error
	if m.hopsBase, err = m.readControl(); err != nil {
		return s, err
	}
	m.quietRemote(&s, m.hopsBase)
	return s, nil
}

// readHere reads every target into s and returns the counters of those
// on this host (those its taps watch), for sample.ReadQuiet.
func (m *measurement) readHere(s *sample.Sample) func() ([]sample.Counters, error) {
	return func() ([]sample.Counters, error) {
		var err error
		if *s, err = m.sampler.Read(); err != nil {
			return nil, err
		}
		var here []sample.Counters
		for i, c := range s.Counters {
			if !m.isRemote(i) {
				here = append(here, c)
			}
		}
		return here, nil
	}
}

// taps are this host's control frame counters: the neighbour frames each
// target receives, then those each target before a gap or another host
// sends.
func (m *measurement) taps() []*sample.Neighbours {
	return append(slices.Clone(m.neighbours), m.sent...)
}

// quietRemote puts into s the counters of the targets on other hosts
// that their agents read at a quiet moment with c (those of s were read
// beside their taps' counts, not with them).
func (m *measurement) quietRemote(s *sample.Sample, c remote.Control) {
	for i := range m.targets {
		if m.isRemote(i) && m.remoteAt[i] < len(c.Counters) && c.Counters[m.remoteAt[i]] != nil {
			s.Counters[i] = *c.Counters[m.remoteAt[i]]
		}
	}
}

// readControl reads the other hosts' neighbour frames, routers'
// counters and CPUs (none without hops there).
func (m *measurement) readControl() (remote.Control, error) {
	if m.hops == nil {
		return remote.Control{}, nil
	}
	return m.hops.Control()
}

// withRemoteRouters adds the IP and conntrack counters of the routers on
// other hosts, read with the baseline and at the end, to the host states.
func (m *measurement) withRemoteRouters(before, after *hostState) {
	for _, x := range []struct {
		h *hostState
		c remote.Control
	}{{before, m.hopsBase}, {after, m.hopsFinal}} {
		for n, v := range x.c.MIB {
			x.h.mib[n] = v
		}
		for n, v := range x.c.CT {
			x.h.ct[n] = v
		}
	}
}

// otherHostsCPUs is each other host's CPUs over the run, from its agent's
// readings with the baseline and at the end (its last, if it was lost),
// each CPU labelled with what the lab places there of the path.
func (b *Bench) otherHostsCPUs() []report.HostUse {
	m := b.meas
	var out []report.HostUse
	for _, host := range slices.Sorted(maps.Keys(m.hopsFinal.Machines)) {
		before, ok := m.hopsBase.Machines[host]
		if !ok {
			continue
		}
		after := m.hopsFinal.Machines[host]
		u := report.HostUse{Host: host, Softnet: report.SoftnetUses(before.Softnet, after.Softnet), CPU: report.CPUUses(before.CPU, after.CPU)}
		roles := account.HostRoles(b.run.Lab.Model(), b.path.Path, host)
		for i := range u.CPU {
			u.CPU[i].Roles = roles[u.CPU[i].N]
		}
		out = append(out, u)
	}
	return out
}

// lostHosts are the other hosts that stopped answering since the hops
// were opened.
func (m *measurement) lostHosts() []report.LostHost {
	if m.hops == nil {
		return nil
	}
	return m.hops.Lost()
}

// isRemote reports whether target i is read on another host.
func (m *measurement) isRemote(i int) bool { return m.hops != nil && m.remoteAt[i] >= 0 }

// final reads the counters at the end of a run, and the neighbour frames
// each interface received since the baseline, at a quiet moment as
// baseline reads.
func (m *measurement) final() (sample.Sample, []control, error) {
	var s sample.Sample
	taps := m.taps()
	totals := make([]uint64, len(taps))
	if err := sample.ReadQuiet(taps, totals, m.readHere(&s)); err != nil {
		return s, nil, err
	}
	var err error
	if m.hopsFinal, err = m.readControl(); err != nil {
		return s, nil, err
	}
	m.quietRemote(&s, m.hopsFinal)
	counts := make([]control, len(m.targets))
	for i := range m.targets {
		if m.isRemote(i) {
			k := m.remoteAt[i]
			counts[i].received = m.hopsFinal.Received[k] - min(m.hopsBase.Received[k], m.hopsFinal.Received[k])
			counts[i].sent = m.hopsFinal.Sent[k] - min(m.hopsBase.Sent[k], m.hopsFinal.Sent[k])
			continue
		}
		counts[i] = control{received: totals[i], sent: totals[len(m.targets)+i]}
	}
	return s, counts, nil
}

// control is the control frames (not the run's) an interface received,
// and, before a gap, sent.
type control struct{ received, sent uint64 }

func (m *measurement) close() {
	if m.hops != nil {
		m.hops.Close()
		m.hops = nil
	}
	for _, c := range append(m.neighbours, m.sent...) {
		if c != nil {
			c.Close()
		}
	}
}

// hopPlan lists the interfaces to sample (the sender's, each hop's ingress
// and egress, the receiver's) with their roles. Hops on other hosts of a
// lab that spans hosts are read there when every host is reached
// (everywhere; each target then names its host); otherwise they are left
// out, and gaps names them at the interface that receives after them.
func hopPlan(l *spec.Lab, p *walk.Path, everywhere bool) (targets []sample.Target, roles []string, gaps []string) {
	all := hopRoles(p.Hops)
	k, gap := 0, []string(nil)
	for _, h := range p.Hops {
		e := l.Elsewhere(h.Node)
		host := ""
		if everywhere && l.Spans() {
			e, host = "", l.Model().Node(h.Node).Host
		}
		if e != "" {
			gap = append(gap, e)
		}
		for _, i := range []string{h.In, h.Out} {
			if i == "" {
				continue
			}
			role := all[k]
			k++
			if e != "" {
				continue
			}
			targets = append(targets, sample.Target{Node: h.Node, Interface: i, Host: host})
			roles = append(roles, role)
			gaps = append(gaps, strings.Join(gap, ", "))
			gap = nil
		}
	}
	return targets, roles, gaps
}

// hopRoles is the role of each interface of a path, in order.
func hopRoles(p []walk.Hop) []string {
	var out []string
	for i, h := range p {
		switch {
		case i == 0:
			out = append(out, "sender")
		case i == len(p)-1:
			out = append(out, "receiver")
		case h.L2:
			out = append(out, "switch in", "switch out")
		default:
			out = append(out, "ingress", "egress")
		}
	}
	return out
}

// routerNodes lists the nodes that route on the path (not switches).
func routerNodes(p *walk.Path) []string {
	var out []string
	for i, h := range p.Hops {
		if i > 0 && i < len(p.Hops)-1 && !h.L2 {
			out = append(out, h.Node)
		}
	}
	return out
}

// liveLines prints, per interval, what sar -n DEV would: time, interface,
// rx and tx pps, rx Mbps, drops; compact: one line with the sender's tx,
// the receiver's rx and the interval's drops, each once (a veth drop is
// counted at both ends of its link).
func liveLines(w io.Writer, targets []sample.Target, roles []string, compact bool) func(sample.Sample) {
	var prev *sample.Sample
	return func(s sample.Sample) {
		if prev != nil && compact {
			rates := sample.Rates(*prev, s)
			fmt.Fprintf(w, "%6.1fs  tx %.0f pps  rx %.0f pps  drops %d\n", s.At.Seconds(), rates[0].TxPPS, rates[len(rates)-1].RxPPS,
				intervalDrops(prev.Counters, s.Counters, roles))
		} else if prev != nil {
			for i, r := range sample.Rates(*prev, s) {
				fmt.Fprintf(w, "%7.2fs  %-22s rx %10.0f pps  tx %10.0f pps  rx %8.1f Mb/s  drops %d\n",
					s.At.Seconds(), targets[i], r.RxPPS, r.TxPPS, r.RxMbps, r.Drops)
			}
		}
		cp := s
		prev = &cp
	}
}

// intervalDrops counts the drops between two samples once each: per link
// the larger of its two ends' counts, elsewhere every drop counter, and
// every qdisc's drops.
func intervalDrops(a, b []sample.Counters, roles []string) uint64 {
	var n uint64
	for i := 0; i < len(b); i++ {
		d := b[i].Sub(a[i])
		n += d.QdiscDrops
		if i+1 < len(b) && account.IsOut(roles[i]) && account.IsIn(roles[i+1]) {
			in := b[i+1].Sub(a[i+1])
			n += max(d.TxDropped, in.RxDropped+in.RxMissed) + in.QdiscDrops
			i++
			continue
		}
		n += d.TxDropped + d.RxDropped + d.RxMissed
	}
	return n
}

// shaperRates are the rates of the measured interfaces whose root qdisc
// limits their rate (tbf, netem with a rate), in bit/s, by target.
func (m *measurement) shaperRates() map[string]uint64 {
	out := map[string]uint64{}
	for t, q := range m.qdiscs {
		if q.Impair != nil && q.Impair.Rate > 0 {
			out[t] = q.Impair.Rate
		}
	}
	return out
}

// hopCounters turns the samples into each target's change over the run,
// with the neighbour frames each received.
func hopCounters(m *measurement, base, final sample.Sample, ctl []control) []report.HopCounters {
	out := make([]report.HopCounters, len(m.targets))
	for i, t := range m.targets {
		out[i] = report.HopCounters{Target: t, Role: m.roles[i], Counters: final.Counters[i].Sub(base.Counters[i]),
			Neighbour: ctl[i].received, SentControl: ctl[i].sent}
		if q := m.qdiscs[t.String()]; q != nil && q.Impair != nil && q.Impair.Duplicate > 0 {
			out[i].Duplicates = q.String()
		}
		if i < len(m.gaps) {
			out[i].After = m.gaps[i]
		}
		out[i].RxIncludesDropped = m.vxlan[i]
	}
	return out
}
