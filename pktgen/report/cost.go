package report

import (
	"fmt"
	"strings"
	"time"
)

// RouterCost is the CPU time the routers on the path spent per packet,
// counted exactly from BPF (package softirq) in two ways.
type RouterCost struct {
	Nodes []string `json:"nodes"`
	// The routers' own work: the time charged to each packet their
	// ingress interfaces (Ingress) took in, from the moment the stack
	// took it to the next packet or the end of the softirq on its CPU
	// (its forwarding up to the egress transmit), Ns over Packets.
	Ingress     []string `json:"ingress,omitempty"`
	Ns          uint64   `json:"ns"`
	Packets     uint64   `json:"packets"`
	NsPerPacket float64  `json:"ns_per_packet"`
	// The receiver's work, counted the same way at its interface: what
	// delivering each packet to its socket cost.
	Receiver            string  `json:"receiver,omitempty"`
	ReceiverNs          uint64  `json:"receiver_ns,omitempty"`
	ReceiverPackets     uint64  `json:"receiver_packets,omitempty"`
	ReceiverNsPerPacket float64 `json:"receiver_ns_per_packet,omitempty"`
	// RelativeCost is the routers' cost per packet over the receiver's
	// on the same CPUs in the same run (ReceiverSameCPUShare: the part of
	// the receiver's packets those CPUs did): a yardstick that cancels
	// the CPUs' speed, which moves from one second to the next. 0 when
	// the receiver's work ran mostly elsewhere.
	RelativeCost         float64 `json:"relative_cost,omitempty"`
	ReceiverSameCPUShare float64 `json:"receiver_same_cpu_share,omitempty"`
	// The CPUs' view: NET_RX and NET_TX softirq time (inline and in
	// ksoftirqd) in Runs runs on CPUs (the routers' placement, or every
	// CPU when none is placed: Placed false), over the packets that left
	// the routers (each router's egress tx, added up).
	CPUs           []int   `json:"cpus"`
	Placed         bool    `json:"placed"`
	CPUSoftirqNs   uint64  `json:"cpu_softirq_ns"`
	Runs           uint64  `json:"softirq_runs"`
	Forwarded      uint64  `json:"forwarded"`
	CPUNsPerPacket float64 `json:"cpu_ns_per_packet"`
	// CPUNote says why CPUNsPerPacket is missing (0) when a router's
	// work ran outside softirq context.
	CPUNote string `json:"cpu_note,omitempty"`
	// Shared says the CPUs' count holds a twin lab's work too (a duet:
	// two labs measured at once on the same CPUs): only the routers' own
	// count is theirs.
	Shared bool `json:"shared_with_twin,omitempty"`
	// Note says why the routers' own count is missing, when it is.
	Note string `json:"note,omitempty"`
}

// costLines are the table's lines on the routers' cost per packet.
func (r *Report) costLines(ew *errWriter) {
	c := r.Cost
	if c == nil {
		if r.CostNote != "" {
			ew.printf("%s\n", r.CostNote)
		}
		return
	}
	if c.Packets > 0 {
		ew.printf("router cost: %.0f ns a packet, exact (BPF): %v over the %d packets %s took in",
			c.NsPerPacket, time.Duration(c.Ns).Round(time.Microsecond), c.Packets, strings.Join(c.Ingress, ", "))
		ew.detailf(" (each from the moment the stack took it to the next packet or the softirq's end on its CPU; BPF on net:netif_receive_skb and irq:softirq_entry/exit)")
		ew.printf("\n")
	} else if c.Note != "" {
		ew.printf("%s\n", c.Note)
	}
	if c.ReceiverPackets > 0 {
		ew.printf("receiver cost: %.0f ns a packet, counted the same way: %v over the %d packets %s took in\n",
			c.ReceiverNsPerPacket, time.Duration(c.ReceiverNs).Round(time.Microsecond), c.ReceiverPackets, c.Receiver)
		switch {
		case c.RelativeCost > 0:
			ew.printf("relative cost: %.3f, the routers' cost over the receiver's on the same CPUs (it did %.0f%% of its packets there)",
				c.RelativeCost, 100*c.ReceiverSameCPUShare)
			if c.Placed {
				ew.detailf(" (the CPUs' speed, which moves from one second to the next, cancels)")
			} else {
				ew.printf("; no router is placed")
				ew.detailf(" (so the senders' work shares those CPUs, and the ratio cancels less of their speed than with a placed router)")
			}
			ew.printf("\n")
		case c.Packets > 0:
			ew.printf("relative cost: none (the receiver did %.0f%% of its packets on the routers' CPUs: no yardstick there)\n", 100*c.ReceiverSameCPUShare)
		}
	}
	cpus := make([]string, len(c.CPUs))
	for i, n := range c.CPUs {
		cpus[i] = fmt.Sprint(n)
	}
	where := "cpu " + strings.Join(cpus, ",")
	if !c.Placed {
		where = "every CPU"
	}
	if c.Shared {
		ew.printf("CPU cost: not this lab's alone (its CPUs also ran the duet's twin lab)\n")
		return
	}
	if c.CPUNote != "" {
		ew.printf("CPU cost: none: %s\n", c.CPUNote)
		return
	}
	ew.printf("CPU cost: %.0f ns a packet forwarded by %s: softirq time on %s, the receiver's work there included",
		c.CPUNsPerPacket, strings.Join(c.Nodes, ", "), where)
	ew.detailf(" (%v of NET_RX/TX softirq in %d runs over the %d packets that left %s", time.Duration(c.CPUSoftirqNs).Round(time.Microsecond), c.Runs, c.Forwarded, strings.Join(c.Nodes, ", "))
	if !c.Placed {
		ew.detailf("; no router is placed: its work runs where the packets arrive")
	}
	if s := r.Stalls; s != nil && s.Stalls > 0 {
		ew.detailf("; the stalls above count where they fell inside a softirq")
	}
	ew.detailf(")")
	ew.printf("\n")
}
