package bench

import (
	"fmt"
	"slices"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/softirq"
)

// The router's cost per packet: the CPU time of its forwarding work
// divided by the packets it forwarded. A router's work on Linux runs in
// the NET_RX (and NET_TX) softirq of the CPU that receives, inline after
// an interrupt or in ksoftirqd, and softirq time is counted exactly by
// package softirq's BPF programs. The sender's own work (a system call
// per batch, veth's transmit) runs in process context and is not in it.

// openSoftirq opens the softirq time counter; without one (no BPF, not
// root) the bench goes on without the cost figure, and says why.
func (b *Bench) openSoftirq() {
	c, err := softirq.Open()
	if err != nil {
		b.softirqNote = fmt.Sprintf("no cost per packet: %v", err)
		return
	}
	b.softirq = c
}

// costCPUs are the CPUs whose softirq time is the routers' work: the
// CPUs the placement gave the routers on the path, or every CPU when no
// router is placed (its work then runs wherever the packets arrive,
// mostly the sender's CPU, and the sum of every CPU's softirq time
// still holds it, with the receiver's).
func (b *Bench) costCPUs() (cpus []int, placed bool) {
	for c, roles := range b.place.roles {
		for _, r := range roles {
			if len(r) > 7 && r[:7] == "router " {
				cpus = append(cpus, c)
				break
			}
		}
	}
	slices.Sort(cpus)
	if len(cpus) > 0 {
		return cpus, true
	}
	return b.allowed, false
}

// routerCost puts the routers' softirq time per forwarded packet on the
// report: the routers' egress tx (what left them) is the packet count.
func (b *Bench) routerCost(rep *report.Report, before, after hostState) {
	if before.softirq == nil || after.softirq == nil {
		rep.CostNote = b.softirqNote
		return
	}
	if len(rep.Routers) == 0 {
		rep.CostNote = "no cost per packet: no router on the path"
		return
	}
	cpus, placed := b.costCPUs()
	ns, runs, err := after.softirq.Since(*before.softirq, cpus, softirq.NetRX, softirq.NetTX)
	if err != nil {
		rep.CostNote = fmt.Sprintf("no cost per packet: %v", err)
		return
	}
	c := &report.RouterCost{CPUs: cpus, SoftirqNs: ns, Runs: runs, Placed: placed}
	for _, r := range rep.Routers {
		c.Nodes = append(c.Nodes, r.Node)
		c.Packets += r.Forwarded
	}
	if c.Packets > 0 {
		c.NsPerPacket = float64(ns) / float64(c.Packets)
	}
	rep.Cost = c
}
