// Package qdisc realises link impairments (spec.Impair) as tc queueing
// disciplines on an interface's egress, through netlink: netem for delay,
// jitter, loss, duplication, reordering and corruption (with its own rate
// when one is given), tbf for a rate alone, which kernels built without
// netem often still have. It also reads them back, with their counters,
// and checks before a deploy that the kernel has the qdiscs a lab needs.
//
// Every function that takes a netlink handle works in the handle's
// namespace; none of them enters a namespace itself.
package qdisc

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// rootHandle is the handle nslab gives the root qdisc it adds ("1:").
var rootHandle = netlink.MakeHandle(1, 0)

// frameOverhead is what an Ethernet frame adds to the MTU (header, no FCS),
// as tbf counts bytes.
const frameOverhead = 14

// Build returns the root qdisc that realises m on the interface with index
// ifindex and the given MTU.
func Build(m *spec.Impair, ifindex, mtu int) netlink.Qdisc {
	attrs := netlink.QdiscAttrs{LinkIndex: ifindex, Handle: rootHandle, Parent: netlink.HANDLE_ROOT}
	if m.NeedsNetem() {
		q := &netlink.Netem{QdiscAttrs: attrs,
			Latency: ticks(m.Delay), Jitter: ticks(m.Jitter), Limit: uint32(m.QueueLimit()),
			Loss: prob(m.Loss), Duplicate: prob(m.Duplicate), ReorderProb: prob(m.Reorder), CorruptProb: prob(m.Corrupt),
			Rate64: m.Rate / 8}
		if m.Reorder > 0 {
			q.Gap = 1 // as tc sets it: every packet but the reordered ones is delayed
		}
		return q
	}
	rate := m.Rate / 8
	burst := tbfBurst(rate, mtu)
	return &netlink.Tbf{QdiscAttrs: attrs, Rate: rate, Buffer: netlink.Xmittime(rate, burst),
		Limit: uint32(m.QueueLimit() * (mtu + frameOverhead))}
}

// tbfBurst is the bucket of a rate limit, in bytes: 10 ms at the rate, and
// never less than one full frame (a packet larger than the bucket could
// never be sent).
func tbfBurst(rateBytes uint64, mtu int) uint32 {
	return uint32(max(rateBytes/100, uint64(mtu+frameOverhead)))
}

// ticks converts a duration to the packet scheduler's ticks, as tc does.
func ticks(d time.Duration) uint32 {
	return uint32(float64(d.Microseconds()) * netlink.TickInUsec())
}

// prob converts a percentage to netem's fraction of 2^32-1, rounded as tc
// rounds it.
func prob(pct float64) uint32 { return uint32(math.Round(pct / 100 * math.MaxUint32)) }

// Set makes m the impairment of link, replacing whatever root qdisc it
// had. The kernel's replace keeps the settings a new netem leaves out (an
// earlier rate, say) and refuses another kind, so an old root is removed
// first, once the kernel is known to have the new kind (Check): a refused
// impairment leaves the link as it was.
func Set(h *netlink.Handle, link netlink.Link, m *spec.Impair) error {
	q := Build(m, link.Attrs().Index, link.Attrs().MTU)
	old, err := Read(h, link)
	if err != nil {
		return err
	}
	if old != nil {
		if old.Kind != q.Type() {
			if err := Check(q.Type()); err != nil {
				return err
			}
		}
		if _, err := Clear(h, link); err != nil {
			return err
		}
	}
	err = h.QdiscAdd(q)
	if errors.Is(err, unix.ENOENT) {
		// The kernel lacks the kind now: Check loads its module if it can.
		if err = Check(q.Type()); err == nil {
			err = h.QdiscAdd(q)
		}
	}
	if err != nil {
		return fmt.Errorf("add %s qdisc (%s) on %s: %w", q.Type(), m, link.Attrs().Name, err)
	}
	return nil
}

// Clear removes link's impairment: its root qdisc goes, and the interface
// gets its default back. It reports whether there was one.
func Clear(h *netlink.Handle, link netlink.Link) (bool, error) {
	st, err := Read(h, link)
	if err != nil || st == nil {
		return false, err
	}
	err = h.QdiscDel(&netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: rootHandle, Parent: netlink.HANDLE_ROOT}})
	if err != nil {
		return true, fmt.Errorf("remove the %s qdisc of %s: %w", st.Kind, link.Attrs().Name, err)
	}
	return true, nil
}
