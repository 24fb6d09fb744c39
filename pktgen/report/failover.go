package report

import (
	"fmt"
	"strings"
	"time"
)

// Failover is what a run with events (bench --event: a link taken down
// and up, an impairment changed while the traffic runs) measured of the
// outage they caused, in RFC 6413's terms: the events with the moments
// they were applied, the packets lost and where (the run's Drops), the
// outage twice over (the receiver's longest gap in sequence numbers, and
// loss ÷ the rate sent: RFC 6413's loss-derived convergence time), and
// whether the traffic came back on another path, with the counters of
// that path's hops.
type Failover struct {
	Events []Event `json:"events"`
	// Lost is what the run lost (Report.Loss, not below 0); SentPPS the
	// rate the sender sent at; LossOutage = Lost / SentPPS.
	Lost       uint64        `json:"lost"`
	SentPPS    float64       `json:"sent_pps"`
	LossOutage time.Duration `json:"loss_derived_outage_ns"`
	// GapPackets and GapOutage are the receiver's longest run of missing
	// sequence numbers and the time between the packets around it (zero,
	// with GapNote, when the reader could not tell).
	GapPackets uint64        `json:"longest_gap_packets"`
	GapOutage  time.Duration `json:"longest_gap_ns"`
	GapNote    string        `json:"gap_note,omitempty"`
	// PathBefore and PathAfter are the path's hops (NODE in>out) before
	// the events and after the run; Rerouted says they differ.
	PathBefore []string `json:"path_before"`
	PathAfter  []string `json:"path_after,omitempty"`
	PathNote   string   `json:"path_note,omitempty"`
	Rerouted   bool     `json:"rerouted"`
	// Detour are the interfaces off the path before that counted 100 of
	// the run's packets or more: the way the traffic went round while the
	// path was broken. Each count is the interface's less the control
	// frames (what is not a run's: ARP, the daemons' hellos and updates)
	// it, or its link's other end, received.
	Detour []HopDelta `json:"detour,omitempty"`
}

// Event is one change made while the traffic ran.
type Event struct {
	What string `json:"what"` // "down r1:eth1"
	// At is when it was asked for, Applied when it was done, both from
	// the start of sending; Applied is negative when the run ended first.
	At      time.Duration `json:"at_ns"`
	Applied time.Duration `json:"applied_ns"`
	Err     string        `json:"error,omitempty"`
}

// HopDelta is what one interface counted over a run.
type HopDelta struct {
	Interface string `json:"interface"` // NODE:IF
	Rx        uint64 `json:"rx_packets"`
	Tx        uint64 `json:"tx_packets"`
}

// failoverLines writes the failover section of a table.
func (r *Report) failoverLines(ew *errWriter) {
	f := r.Failover
	if f == nil {
		return
	}
	ew.printf("\nevents:\n")
	for _, e := range f.Events {
		switch {
		case e.Err != "":
			ew.printf("  %8.3f s  %s: failed: %s\n", e.At.Seconds(), e.What, e.Err)
		case e.Applied < 0:
			ew.printf("  %8.3f s  %s: not applied (the run ended first)\n", e.At.Seconds(), e.What)
		default:
			ew.printf("  %8.3f s  %s (applied at %.3f s)\n", e.At.Seconds(), e.What, e.Applied.Seconds())
		}
	}
	ew.printf("outage: %d packets lost", f.Lost)
	if len(r.Drops) > 0 {
		var at []string
		for _, d := range r.Drops {
			at = append(at, fmt.Sprintf("%d %s", d.Packets, d.Place))
		}
		ew.printf(" (%s)", strings.Join(at, ", "))
	}
	ew.printf("\n  loss-derived (RFC 6413): %d lost / %.0f pps sent = %.3f s\n", f.Lost, f.SentPPS, f.LossOutage.Seconds())
	if f.GapNote != "" {
		ew.printf("  longest sequence gap: %s\n", f.GapNote)
	} else {
		ew.printf("  longest sequence gap: %d packets, %.3f s between the packets around it\n", f.GapPackets, f.GapOutage.Seconds())
	}
	ew.printf("path before the events: %s\n", strings.Join(f.PathBefore, " -> "))
	if len(f.Detour) > 0 {
		ew.printf("the traffic went round it by (counters over the run, off the path):\n")
		for _, h := range f.Detour {
			ew.printf("  %-16s rx %d, tx %d packets\n", h.Interface, h.Rx, h.Tx)
		}
	} else {
		ew.printf("no interface off the path counted the traffic: it did not go round\n")
	}
	switch {
	case f.PathNote != "":
		ew.printf("path after the run: %s\n", f.PathNote)
	case f.Rerouted:
		ew.printf("path after the run: %s (another path)\n", strings.Join(f.PathAfter, " -> "))
	default:
		ew.printf("path after the run: the same\n")
	}
}
