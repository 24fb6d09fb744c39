package bench

import (
	"fmt"
	"io"

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
	routers    map[string]*ns.NS
	mtu        map[string]int          // by target ("ns2:veth1-peer")
	qdiscs     map[string]*qdisc.State // by target, for those with a root qdisc of their own
}

// newMeasurement sets up the measurement of a path (or of the interfaces
// given instead, the last being the receiver).
func newMeasurement(r *lab.Running, path *spec.Path, measure []spec.Endpoint, ipv6 bool) (*measurement, error) {
	m := &measurement{routers: map[string]*ns.NS{}, mtu: map[string]int{}, qdiscs: map[string]*qdisc.State{}}
	if len(measure) > 0 {
		for i, ep := range measure {
			if r.Node(ep.Node) == nil {
				return nil, fmt.Errorf("--measure %s: no node %s in the lab", ep, ep.Node)
			}
			m.targets = append(m.targets, sample.TargetOf(r, ep))
			m.roles = append(m.roles, map[bool]string{true: "receiver", false: "measured"}[i == len(measure)-1])
		}
	} else {
		m.targets, m.roles = targets(r, path), roles(path.Hops)
		for _, node := range routerNodes(path) {
			m.routers[node] = r.Node(node).NS
		}
	}
	var err error
	if m.sampler, err = sample.New(r, m.targets); err != nil {
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
	for i, t := range m.targets {
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
		if !isIn(m.roles[i]) && m.roles[i] != "measured" {
			continue
		}
		if m.neighbours[i], err = sample.CountNeighbours(r.Node(t.Node).NS, link.Attrs().Index, ipv6); err != nil {
			return err
		}
	}
	return nil
}

// baseline reads the counters at the start of a run and zeroes the
// neighbour frame counts.
func (m *measurement) baseline() (sample.Sample, error) {
	for _, c := range m.neighbours {
		if c != nil {
			if _, err := c.Count(); err != nil {
				return sample.Sample{}, err
			}
		}
	}
	return m.sampler.Read()
}

// final reads the counters at the end of a run, and the neighbour frames
// each interface received since the baseline.
func (m *measurement) final() (sample.Sample, []uint64, error) {
	s, err := m.sampler.Read()
	if err != nil {
		return s, nil, err
	}
	counts := make([]uint64, len(m.targets))
	for i, c := range m.neighbours {
		if c != nil {
			if counts[i], err = c.Count(); err != nil {
				return s, nil, err
			}
		}
	}
	return s, counts, nil
}

func (m *measurement) close() {
	for _, c := range m.neighbours {
		if c != nil {
			c.Close()
		}
	}
}

// targets lists the interfaces to sample: the sender's, each hop's ingress
// and egress, the receiver's.
func targets(r *lab.Running, p *spec.Path) []sample.Target {
	var out []sample.Target
	for _, h := range p.Hops {
		for _, i := range []string{h.In, h.Out} {
			if i != "" {
				out = append(out, sample.TargetOf(r, spec.Endpoint{Node: h.Node, Interface: i}))
			}
		}
	}
	return out
}

func roles(p []spec.Hop) []string {
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
func routerNodes(p *spec.Path) []string {
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
		if i+1 < len(b) && isOut(roles[i]) && isIn(roles[i+1]) {
			in := b[i+1].Sub(a[i+1])
			n += max(d.TxDropped, in.RxDropped+in.RxMissed) + in.QdiscDrops
			i++
			continue
		}
		n += d.TxDropped + d.RxDropped + d.RxMissed
	}
	return n
}
