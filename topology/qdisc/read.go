package qdisc

import (
	"fmt"
	"math"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// State is an interface's root qdisc as the kernel has it.
type State struct {
	Kind string // "netem", "tbf", or another kind nslab did not set
	// Impair is what a netem or tbf root does, read back from the kernel;
	// nil for other kinds.
	Impair *spec.Impair
	// Child is the kind of the queue under a netem or tbf root ("" when
	// it has none of nslab's: tbf's own byte fifo, netem's tfifo).
	Child string
	Counters
	// ChildCounters are the child queue's own counters (nil without one):
	// a drop at its enqueue counts at the root too, codel's at its
	// dequeue at the child alone.
	ChildCounters *Counters
}

// Counters are a qdisc's counters: a root's hold its children's enqueue
// drops.
type Counters struct {
	Packets    uint32 `json:"packets"`    // sent on to the device
	Bytes      uint64 `json:"bytes"`      // sent on to the device
	Drops      uint32 `json:"drops"`      // dropped: netem's loss, a full queue, AQM
	Overlimits uint32 `json:"overlimits"` // times a shaper's rate held a packet back (tbf, htb); marks for some AQMs
	Requeues   uint32 `json:"requeues"`   // handed back by a busy device
	Qlen       uint32 `json:"qlen"`       // packets queued now
	Backlog    uint32 `json:"backlog"`    // bytes queued now
}

// Sub returns c - o (the counters wrap at 2^32, so this is right across a
// wrap too); Qlen and Backlog are c's (levels, not counts).
func (c Counters) Sub(o Counters) Counters {
	return Counters{Packets: c.Packets - o.Packets, Bytes: c.Bytes - o.Bytes, Drops: c.Drops - o.Drops, Overlimits: c.Overlimits - o.Overlimits,
		Requeues: c.Requeues - o.Requeues, Qlen: c.Qlen, Backlog: c.Backlog}
}

// String says the root qdisc in tc's words: "netem delay 20ms loss 1%".
func (s *State) String() string {
	out := s.Kind
	if s.Impair != nil {
		out += " " + s.Impair.String()
	}
	if s.Child != "" {
		out += ", queue " + s.Child
	}
	return out
}

// Read returns link's root qdisc, or nil when it has none of its own (the
// veth default, noqueue).
func Read(h *netlink.Handle, link netlink.Link) (*State, error) {
	qs, err := nlsafe.QdiscList(h, link)
	if err != nil {
		return nil, fmt.Errorf("read the qdiscs of %s: %w", link.Attrs().Name, err)
	}
	var st *State
	var child netlink.Qdisc
	for _, q := range qs {
		a := q.Attrs()
		switch {
		case a.LinkIndex != link.Attrs().Index || q.Type() == "noqueue":
		case a.Parent == netlink.HANDLE_ROOT:
			st = &State{Kind: q.Type(), Impair: impairOf(q, link.Attrs().MTU), Counters: countersOf(q)}
		case a.Parent == netlink.MakeHandle(1, 1) && a.Handle == childHandle:
			child = q
		}
	}
	if st != nil && child != nil {
		// A drop at the child's enqueue counts at the root too; codel's
		// drops at dequeue count at the child alone: the larger holds both.
		cc := countersOf(child)
		st.Child, st.Drops, st.ChildCounters = child.Type(), max(st.Drops, cc.Drops), &cc
	}
	return st, nil
}

// countersOf reads a qdisc's counters.
func countersOf(q netlink.Qdisc) Counters {
	if s := q.Attrs().Statistics; s != nil && s.Basic != nil && s.Queue != nil {
		return Counters{Packets: s.Basic.Packets, Bytes: s.Basic.Bytes, Drops: s.Queue.Drops, Overlimits: s.Queue.Overlimits,
			Requeues: s.Queue.Requeues, Qlen: s.Queue.Qlen, Backlog: s.Queue.Backlog}
	}
	return Counters{}
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
