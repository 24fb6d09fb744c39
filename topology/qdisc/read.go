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
	// Child is the kind of the queue under a netem or tbf root ("" when
	// it has none of nslab's: tbf's own byte fifo, netem's tfifo).
	Child string
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
		st.Child, st.Drops = child.Type(), max(st.Drops, countersOf(child).Drops)
	}
	return st, nil
}

// countersOf reads a qdisc's counters.
func countersOf(q netlink.Qdisc) Counters {
	if s := q.Attrs().Statistics; s != nil && s.Basic != nil && s.Queue != nil {
		return Counters{Packets: s.Basic.Packets, Drops: s.Queue.Drops, Qlen: s.Queue.Qlen}
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
