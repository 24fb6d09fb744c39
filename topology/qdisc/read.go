package qdisc

import (
	"fmt"
	"math"
	"time"

	"github.com/nslab/nslab/topology/nlsafe"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// State is an interface's root qdisc as the kernel has it.
type State struct {
	Kind string // "netem", "tbf", or another kind nslab did not set
	// Impair is what a netem or tbf root does, read back from the kernel;
	// nil for other kinds.
	Impair *spec.Impair
	Counters
}

// Counters are a root qdisc's counters (its children's drops included).
type Counters struct {
	Packets uint32 `json:"packets"` // sent on to the device
	Drops   uint32 `json:"drops"`   // dropped: netem's loss, a full queue
	Qlen    uint32 `json:"qlen"`    // packets queued now
}

// Sub returns c - o (the counters wrap at 2^32, so this is right across a
// wrap too).
func (c Counters) Sub(o Counters) Counters {
	return Counters{Packets: c.Packets - o.Packets, Drops: c.Drops - o.Drops, Qlen: c.Qlen}
}

// String says the root qdisc in tc's words: "netem delay 20ms loss 1%".
func (s *State) String() string {
	if s.Impair == nil {
		return s.Kind
	}
	return s.Kind + " " + s.Impair.String()
}

// Read returns link's root qdisc, or nil when it has none of its own (the
// veth default, noqueue).
func Read(h *netlink.Handle, link netlink.Link) (*State, error) {
	qs, err := nlsafe.QdiscList(h, link)
	if err != nil {
		return nil, fmt.Errorf("read the qdiscs of %s: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent != netlink.HANDLE_ROOT || a.LinkIndex != link.Attrs().Index || q.Type() == "noqueue" {
			continue
		}
		st := &State{Kind: q.Type(), Impair: impairOf(q, link.Attrs().MTU)}
		if s := a.Statistics; s != nil && s.Basic != nil && s.Queue != nil {
			st.Counters = Counters{Packets: s.Basic.Packets, Drops: s.Queue.Drops, Qlen: s.Queue.Qlen}
		}
		return st, nil
	}
	return nil, nil
}

// impairOf reads an impairment back from a netem or tbf qdisc.
func impairOf(q netlink.Qdisc, mtu int) *spec.Impair {
	switch q := q.(type) {
	case *netlink.Netem:
		return &spec.Impair{Delay: duration(q.Latency), Jitter: duration(q.Jitter),
			Loss: percent(q.Loss), Duplicate: percent(q.Duplicate), Reorder: percent(q.ReorderProb), Corrupt: percent(q.CorruptProb),
			Rate: q.Rate64 * 8, Limit: int(q.Limit)}
	case *netlink.Tbf:
		m := &spec.Impair{Rate: q.Rate * 8}
		if per := uint32(mtu + frameOverhead); per > 0 && q.Limit%per == 0 {
			m.Limit = int(q.Limit / per)
		}
		return m
	}
	return nil
}

// duration converts scheduler ticks back, to the microsecond.
func duration(t uint32) time.Duration {
	return time.Duration(math.Round(float64(t)/netlink.TickInUsec())) * time.Microsecond
}

// percent converts netem's fraction of 2^32-1 back, to six digits.
func percent(p uint32) float64 {
	return math.Round(float64(p)/math.MaxUint32*100*1e6) / 1e6
}
