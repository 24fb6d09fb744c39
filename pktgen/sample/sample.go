// Package sample reads the interface counters of lab interfaces, each in
// its own namespace through the node's netlink handle (IFLA_STATS64, not
// /proc/net/dev or sysfs, which show another namespace from a Go thread),
// every read stamped with the monotonic clock. It also counts the
// neighbour-resolution frames (ARP, IPv6 neighbour discovery) that cross
// an interface during a run, so that they are not taken for the run's
// packets.
package sample

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nslab/nslab/pktgen/measured"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Target is one interface to sample (package measured).
type Target = measured.Target

// TargetOf is the target for interface ep of a running lab.
func TargetOf(r *deployed.Opened, ep spec.Endpoint) Target {
	return Target{Node: ep.Node, Namespace: r.Lab.Namespace(ep.Node), Interface: ep.Interface}
}

// Counters are one interface's counters at one moment, and Sample every
// target's at one moment (package measured).
type (
	Counters = measured.Counters
	Sample   = measured.Sample
)

// Sampler reads a fixed set of interfaces, each through its node's handle:
// one RTM_GETLINK per interface and read.
type Sampler struct {
	Targets []Target
	handles []*netlink.Handle
	links   []netlink.Link // with a root qdisc of their own; nil otherwise
	indexes []int
	start   time.Time
	// remote reads the targets on other hosts (their Host set), and
	// remoteAt is each target's place among remote's (-1: local).
	remote   Remote
	remoteAt []int
}

// Remote reads targets on other hosts of a lab that spans hosts, through
// their agents (package remote): every one of its targets at each Read.
type Remote interface {
	Targets() []Target
	Read() ([]Counters, error)
}

// NewSpanning is New for targets some of which are on other hosts (those
// among rem's targets): they are read through rem, the others here.
func NewSpanning(r *deployed.Opened, targets []Target, rem Remote) (*Sampler, error) {
	var local []Target
	at := make([]int, len(targets))
	for i, t := range targets {
		if at[i] = slices.Index(rem.Targets(), t); at[i] < 0 {
			local = append(local, t)
		}
	}
	l, err := New(r, local)
	if err != nil {
		return nil, err
	}
	s := &Sampler{Targets: targets, start: l.start, remote: rem, remoteAt: at}
	k := 0
	for i := range targets {
		if at[i] >= 0 {
			s.handles, s.indexes, s.links = append(s.handles, nil), append(s.indexes, 0), append(s.links, nil)
			continue
		}
		s.handles, s.indexes, s.links = append(s.handles, l.handles[k]), append(s.indexes, l.indexes[k]), append(s.links, l.links[k])
		k++
	}
	return s, nil
}

// New finds the targets' interfaces in the running lab. It opens nothing:
// the handles are the lab's.
func New(r *deployed.Opened, targets []Target) (*Sampler, error) {
	s := &Sampler{Targets: targets, start: time.Now()}
	links := make([]netlink.Link, len(targets))
	for i, t := range targets {
		n := r.Node(t.Node)
		if n == nil {
			return nil, fmt.Errorf("sample %s: no node %s in lab %s", t, t.Node, r.Lab.Name)
		}
		l, err := nlsafe.LinkByName(n.Handle, t.Interface)
		if err != nil {
			return nil, fmt.Errorf("sample %s: %w", t, err)
		}
		s.handles = append(s.handles, n.Handle)
		s.indexes = append(s.indexes, l.Attrs().Index)
		links[i] = l
	}
	if err := s.findQdiscs(links); err != nil {
		return nil, err
	}
	return s, nil
}

// FindQdiscs looks again for each target's own root qdisc (an impairment
// set or cleared since), so that Read reads the drops of those that have
// one.
func (s *Sampler) FindQdiscs() error {
	links := make([]netlink.Link, len(s.handles))
	for i, h := range s.handles {
		if h == nil {
			continue // on another host
		}
		l, err := h.LinkByIndex(s.indexes[i])
		if err != nil {
			return fmt.Errorf("sample %s: %w", s.Targets[i], err)
		}
		links[i] = l
	}
	return s.findQdiscs(links)
}

// findQdiscs keeps, of the targets' links, those with a root qdisc of
// their own: only they cost Read a second read.
func (s *Sampler) findQdiscs(links []netlink.Link) error {
	s.links = make([]netlink.Link, len(links))
	for i, l := range links {
		if l == nil {
			continue // on another host
		}
		st, err := qdisc.Read(s.handles[i], l)
		if err != nil {
			return fmt.Errorf("sample %s: %w", s.Targets[i], err)
		}
		if st != nil {
			s.links[i] = l
		}
	}
	return nil
}

// Read samples every target once.
func (s *Sampler) Read() (Sample, error) {
	out := Sample{Counters: make([]Counters, len(s.Targets))}
	if err := s.readRemote(out.Counters); err != nil {
		return out, err
	}
	for i, h := range s.handles {
		if h == nil {
			continue // read by readRemote
		}
		l, err := h.LinkByIndex(s.indexes[i])
		if err != nil {
			return out, fmt.Errorf("sample %s: %w", s.Targets[i], err)
		}
		st := l.Attrs().Statistics
		if st == nil {
			return out, fmt.Errorf("sample %s: the kernel sent no counters", s.Targets[i])
		}
		out.Counters[i] = Counters{RxPackets: st.RxPackets, TxPackets: st.TxPackets, RxBytes: st.RxBytes, TxBytes: st.TxBytes, RxDropped: st.RxDropped,
			TxDropped: st.TxDropped, RxErrors: st.RxErrors, TxErrors: st.TxErrors, RxMissed: st.RxMissedErrors}
		if s.links[i] != nil {
			q, err := qdisc.Read(h, s.links[i])
			if err != nil {
				return out, fmt.Errorf("sample %s: %w", s.Targets[i], err)
			}
			if q != nil {
				c := &out.Counters[i]
				c.QdiscDrops, c.QdiscQueued, c.QdiscOverlimits, c.QdiscBacklog = uint64(q.Drops), uint64(q.Qlen), uint64(q.Overlimits), uint64(q.Backlog)
			}
		}
	}
	out.At = time.Since(s.start)
	return out, nil
}

// readRemote fills the counters of the targets on other hosts.
func (s *Sampler) readRemote(into []Counters) error {
	if s.remote == nil {
		return nil
	}
	c, err := s.remote.Read()
	if err != nil {
		return err
	}
	for i, k := range s.remoteAt {
		if k >= 0 {
			into[i] = c[k]
		}
	}
	return nil
}

// Run samples at every interval until ctx is done and hands each sample to
// fn (on the sampler's goroutine). The samples are returned, the first one
// taken at once.
func (s *Sampler) Run(ctx context.Context, interval time.Duration, fn func(Sample)) ([]Sample, error) {
	var all []Sample
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		smp, err := s.Read()
		if err != nil {
			return all, err
		}
		all = append(all, smp)
		if fn != nil {
			fn(smp)
		}
		select {
		case <-ctx.Done():
			return all, nil
		case <-t.C:
		}
	}
}

// Rate is one interface's traffic over an interval (package measured).
type Rate = measured.Rate

// Rates computes every target's rates between two samples.
func Rates(a, b Sample) []Rate { return measured.Rates(a, b) }

// Steady returns the first and last samples of the steady window (see
// measured.Steady).
func Steady(samples []Sample) (first, last Sample, ok bool) { return measured.Steady(samples) }
