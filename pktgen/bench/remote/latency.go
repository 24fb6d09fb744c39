package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/measured"
	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/topology/lab/deployed"
)

// A run's receiver on another host reads the run's packets there (its
// one-way latency and sequence accounting, package receive), its clock
// corrected by its offset against the sender's host.

// Ops of the receiver's reader.
const (
	OpLatencyOpen = "latency-open" // start reading the run's packets at the receiver
	OpLatencyStop = "latency-stop" // stop, and say what was read
)

// ReaderAsk opens the receiver's reader: its interface, and the
// receive.Options that are not the interface's index.
type ReaderAsk struct {
	Node        string        `json:"node"`
	Interface   string        `json:"interface"`
	Port        uint16        `json:"port"`
	IPv6        bool          `json:"ipv6,omitempty"`
	Nanoseconds bool          `json:"nanoseconds,omitempty"`
	Every       uint32        `json:"every,omitempty"`
	ClockOffset time.Duration `json:"clock_offset_ns"`
}

// ArrivalsAsk says what to make of the packets read: the latency's
// method and the send stamp's resolution, and, for the accounting by
// sequence (Sequence), the first sequence number and how many the one
// sending thread sent; Sizes counts them by size.
type ArrivalsAsk struct {
	Method       string        `json:"method"`
	ResolutionNs int64         `json:"resolution_ns"`
	Sequence     bool          `json:"sequence,omitempty"`
	FirstSeq     uint32        `json:"first_seq,omitempty"`
	Sent         uint64        `json:"sent,omitempty"`
	Sizes        bool          `json:"sizes,omitempty"`
	Linger       time.Duration `json:"linger_ns,omitempty"`
}

// Arrivals is what the receiver's reader made of a run's packets.
type Arrivals struct {
	Latency  *measured.Latency  `json:"latency,omitempty"`
	Sequence *measured.Sequence `json:"sequence,omitempty"`
	Sizes    map[int]uint64     `json:"sizes,omitempty"`
	Missed   uint64             `json:"missed,omitempty"` // passed the filter, not put in the ring
}

// ArrivalsOf is what a stopped reader's result says, as q asks.
func ArrivalsOf(r *receive.Result, q ArrivalsAsk) Arrivals {
	a := Arrivals{Latency: r.Tracker.Latency(q.Method, q.ResolutionNs), Missed: r.Missed}
	if q.Sizes {
		a.Sizes = r.Tracker.Sizes()
	}
	if q.Sequence {
		a.Sequence = r.Tracker.Sequence(q.FirstSeq, map[int]uint64{0: q.Sent})
	}
	return a
}

// openReader starts the receiver's reader on this host.
func openReader(r *deployed.Opened, a *ReaderAsk) (*receive.Reader, error) {
	n := r.Node(a.Node)
	if n == nil || !r.Lab.Local(a.Node) {
		return nil, fmt.Errorf("node %s is not on this host", a.Node)
	}
	l, err := nlsafe.LinkByName(n.Handle, a.Interface)
	if err != nil {
		return nil, fmt.Errorf("the receiver's interface %s:%s: %w", a.Node, a.Interface, err)
	}
	return receive.Open(n.NS, receive.Options{Ifindex: l.Attrs().Index, Port: a.Port, IPv6: a.IPv6, Nanoseconds: a.Nanoseconds, Every: a.Every, ClockOffset: a.ClockOffset})
}

// stopReader stops it and makes what q asks of what it read.
func stopReader(rd *receive.Reader, q *ArrivalsAsk) (*Arrivals, error) {
	res, err := rd.Stop(context.Background(), q.Linger)
	if err != nil {
		return nil, err
	}
	a := ArrivalsOf(res, *q)
	return &a, nil
}
