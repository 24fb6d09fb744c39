package qdisc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/nslab/nslab/internal/units"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Bursty loss (spec.Impair.LossBurst) is netem's Gilbert-Elliott loss
// model, which the netlink library cannot send: the netem root goes as a
// raw RTM_NEWQDISC, struct tc_netem_qopt followed by its attributes, as
// tc builds it.

// Attribute numbers of linux/pkt_sched.h the netlink library lacks.
const (
	tcaNetemReorder = 3 // TCA_NETEM_REORDER: struct tc_netem_reorder
	tcaNetemCorrupt = 4 // TCA_NETEM_CORRUPT: struct tc_netem_corrupt
	tcaNetemLoss    = 5 // TCA_NETEM_LOSS, nested: NETEM_LOSS_GE
	tcaNetemRate    = 6 // TCA_NETEM_RATE: struct tc_netem_rate
	tcaNetemRate64  = 8 // TCA_NETEM_RATE64: u64 bytes a second
	netemLossGE     = 2 // NETEM_LOSS_GE: struct tc_netem_gemodel {p, r, h, k1}
)

// setBursty makes m, an impairment with bursty loss, the root of the
// link with index ifindex, on a thread in its namespace (inNS).
func setBursty(inNS func(func() error) error, h *netlink.Handle, link netlink.Link, m *spec.Impair) error {
	if _, err := Clear(h, link); err != nil {
		return err
	}
	if err := Check("netem"); err != nil {
		return err
	}
	msg := newQdisc(link.Attrs().Index, netlink.HANDLE_ROOT, rootHandle, "netem", nl.NewRtAttr(nl.TCA_OPTIONS, netemOptions(m)))
	if err := inNS(func() error { return send(msg) }); err != nil {
		return fmt.Errorf("add netem qdisc (%s) on %s: %w", m, link.Attrs().Name, err)
	}
	return nil
}

// netemOptions is netem's TCA_OPTIONS for m: the fixed struct, then the
// attributes. The struct's loss holds the model's mean, which the kernel
// does not use under a loss model but reads back.
func netemOptions(m *spec.Impair) []byte {
	u32 := binary.NativeEndian.AppendUint32
	gap := uint32(0)
	if m.Reorder > 0 {
		gap = 1
	}
	var b []byte
	for _, v := range []uint32{ticks(m.Delay), uint32(m.QueueLimit()), prob(m.Loss), gap, prob(m.Duplicate), ticks(m.Jitter)} {
		b = u32(b, v)
	}
	attr := func(t int, data []byte) { b = append(b, nl.NewRtAttr(t, data).Serialize()...) }
	if m.Reorder > 0 {
		attr(tcaNetemReorder, u32(u32(nil, prob(m.Reorder)), 0))
	}
	if m.Corrupt > 0 {
		attr(tcaNetemCorrupt, u32(u32(nil, prob(m.Corrupt)), 0))
	}
	p, r := spec.GELoss(m.Loss, m.LossBurst)
	ge := nl.NewRtAttr(tcaNetemLoss|unix.NLA_F_NESTED, nil)
	ge.AddRtAttr(netemLossGE, u32(u32(u32(u32(nil, prob(p)), prob(r)), 0), 0)) // h 0: the bad state loses all; k1 0: the good none
	b = append(b, ge.Serialize()...)
	if m.Rate > 0 {
		bytes := m.Rate / 8
		rate := uint32(min(bytes, math.MaxUint32))
		attr(tcaNetemRate, u32(u32(u32(u32(nil, rate), 0), 0), 0))
		if bytes >= math.MaxUint32 {
			attr(tcaNetemRate64, binary.NativeEndian.AppendUint64(nil, bytes))
		}
	}
	return b
}

// geShell is the tc words of m's bursty loss: "loss gemodel P R 100% 0%".
func geShell(m *spec.Impair) []string {
	p, r := spec.GELoss(m.Loss, m.LossBurst)
	return []string{"loss", "gemodel", units.FormatPercent(p), units.FormatPercent(r), "100%", "0%"}
}
