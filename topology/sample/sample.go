// Package sample reads the interface counters of lab interfaces, each in
// its own namespace through a netlink handle opened there (IFLA_STATS64,
// not /proc/net/dev or sysfs, which show another namespace from a Go
// thread), every read stamped with the monotonic clock.
package sample

import (
	"context"
	"fmt"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// Target is one interface to sample.
type Target struct {
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Interface string `json:"interface"`
}

func (t Target) String() string { return t.Node + ":" + t.Interface }

// Counters are one interface's counters at one moment.
type Counters struct {
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxDropped uint64 `json:"rx_dropped"`
	TxDropped uint64 `json:"tx_dropped"`
	RxErrors  uint64 `json:"rx_errors"`
	TxErrors  uint64 `json:"tx_errors"`
	RxMissed  uint64 `json:"rx_missed"`
}

// Sub returns c - o, counter by counter.
func (c Counters) Sub(o Counters) Counters {
	return Counters{c.RxPackets - o.RxPackets, c.TxPackets - o.TxPackets, c.RxBytes - o.RxBytes, c.TxBytes - o.TxBytes,
		c.RxDropped - o.RxDropped, c.TxDropped - o.TxDropped, c.RxErrors - o.RxErrors, c.TxErrors - o.TxErrors, c.RxMissed - o.RxMissed}
}

// Sample is every target's counters at one moment.
type Sample struct {
	At       time.Duration `json:"at"` // since the sampler started, monotonic
	Counters []Counters    `json:"counters"`
}

// Sampler reads a fixed set of interfaces. One netlink handle per
// namespace; each read is one RTM_GETLINK per interface.
type Sampler struct {
	Targets []Target
	handles []*netlink.Handle
	indexes []int
	start   time.Time
	closers []func()
}

// New opens the namespaces of the targets (named under dir) and finds the
// interfaces. Close it when done.
func New(dir string, targets []Target) (*Sampler, error) {
	s := &Sampler{Targets: targets, start: time.Now()}
	byNS := map[string]*netlink.Handle{}
	for _, t := range targets {
		h := byNS[t.Namespace]
		if h == nil {
			n, err := ns.Open(dir, t.Namespace)
			if err != nil {
				s.Close()
				return nil, err
			}
			h, err = n.NetlinkHandle()
			n.Close()
			if err != nil {
				s.Close()
				return nil, err
			}
			byNS[t.Namespace] = h
			s.closers = append(s.closers, h.Close)
		}
		l, err := h.LinkByName(t.Interface)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sample %s: %w", t, err)
		}
		s.handles = append(s.handles, h)
		s.indexes = append(s.indexes, l.Attrs().Index)
	}
	return s, nil
}

// Close releases the handles.
func (s *Sampler) Close() {
	for _, c := range s.closers {
		c()
	}
	s.closers = nil
}

// Read samples every target once.
func (s *Sampler) Read() (Sample, error) {
	out := Sample{Counters: make([]Counters, len(s.Targets))}
	for i, h := range s.handles {
		l, err := h.LinkByIndex(s.indexes[i])
		if err != nil {
			return out, fmt.Errorf("sample %s: %w", s.Targets[i], err)
		}
		st := l.Attrs().Statistics
		if st == nil {
			return out, fmt.Errorf("sample %s: the kernel sent no counters", s.Targets[i])
		}
		out.Counters[i] = Counters{st.RxPackets, st.TxPackets, st.RxBytes, st.TxBytes, st.RxDropped, st.TxDropped, st.RxErrors, st.TxErrors, st.RxMissedErrors}
	}
	out.At = time.Since(s.start)
	return out, nil
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

// Rate is one interface's traffic over an interval.
type Rate struct {
	RxPPS, TxPPS   float64
	RxMbps, TxMbps float64 // counter bytes: L2 without FCS
	Drops          uint64  // rx and tx dropped, and rx missed
}

// Rates computes every target's rates between two samples.
func Rates(a, b Sample) []Rate {
	dt := (b.At - a.At).Seconds()
	out := make([]Rate, len(a.Counters))
	if dt <= 0 {
		return out
	}
	for i := range a.Counters {
		d := b.Counters[i].Sub(a.Counters[i])
		out[i] = Rate{float64(d.RxPackets) / dt, float64(d.TxPackets) / dt, float64(d.RxBytes) * 8 / dt / 1e6, float64(d.TxBytes) * 8 / dt / 1e6,
			d.RxDropped + d.TxDropped + d.RxMissed}
	}
	return out
}

// Steady returns the first and last samples of the steady window: the
// samples of a run without its first and last intervals, which the run
// only partly covers. ok is false with fewer than four samples.
func Steady(samples []Sample) (first, last Sample, ok bool) {
	if len(samples) < 4 {
		return Sample{}, Sample{}, false
	}
	return samples[1], samples[len(samples)-2], true
}
