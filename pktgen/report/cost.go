package report

import (
	"fmt"
	"strings"
	"time"
)

// RouterCost is the CPU time the routers on the path spent per packet
// they forwarded: NET_RX and NET_TX softirq time (package softirq: BPF
// on the irq:softirq_entry/exit tracepoints, ksoftirqd's runs included)
// on the CPUs that did their work, over the packets that left them.
type RouterCost struct {
	Nodes []string `json:"nodes"`
	// CPUs are the CPUs counted: the routers' placement, or every CPU
	// when no router is placed (Placed false).
	CPUs   []int `json:"cpus"`
	Placed bool  `json:"placed"`
	// SoftirqNs is their NET_RX and NET_TX time over the run, in Runs
	// softirq runs.
	SoftirqNs uint64 `json:"softirq_ns"`
	Runs      uint64 `json:"softirq_runs"`
	// Packets is what left the routers (each router's egress tx, added
	// up: a packet forwarded by two routers counts twice).
	Packets     uint64  `json:"packets"`
	NsPerPacket float64 `json:"ns_per_packet"`
}

// CostMethod says how RouterCost is counted, and what it holds besides
// the routers' own work.
const CostMethod = "NET_RX+NET_TX softirq time from BPF (irq:softirq_entry/exit, inline and in ksoftirqd) on the routers' CPUs, over the packets that left the routers; it holds whatever else runs in softirq on those CPUs (the receiver's receive work where veth queues it there), and any stall of the CPU inside a softirq"

// costLine is the table's line on the routers' cost per packet.
func (r *Report) costLine(ew *errWriter) {
	c := r.Cost
	if c == nil {
		if r.CostNote != "" {
			ew.printf("%s\n", r.CostNote)
		}
		return
	}
	cpus := make([]string, len(c.CPUs))
	for i, n := range c.CPUs {
		cpus[i] = fmt.Sprint(n)
	}
	where := "cpu " + strings.Join(cpus, ",")
	if !c.Placed {
		where = "every CPU (no router is placed: its work runs where the packets arrive)"
	}
	ew.printf("router cost: %.0f ns a packet forwarded (%v of NET_RX/TX softirq on %s in %d runs, over %d packets that left %s; exact, from BPF)",
		c.NsPerPacket, time.Duration(c.SoftirqNs).Round(time.Microsecond), where, c.Runs, c.Packets, strings.Join(c.Nodes, ", "))
	if s := r.Stalls; s != nil && s.Stalls > 0 {
		ew.printf("; the CPUs stalled %v in all meanwhile, which counts where it fell inside a softirq", s.TotalNs.Round(10*time.Microsecond))
	}
	ew.printf("\n")
}
