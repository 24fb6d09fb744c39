package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nslab/nslab/internal/caps"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/softirq"
	"github.com/nslab/nslab/topology/rootless"
	"github.com/nslab/nslab/topology/spec"
)

// The routers' cost per packet. A router's work on Linux runs in the
// NET_RX (and NET_TX) softirq of the CPU that receives, inline after an
// interrupt or in ksoftirqd; the sender's own work (a system call per
// batch, veth's transmit) runs in process context and is not in it. Two
// counts, both exact (package softirq, BPF):
//   - the routers' own: the time charged to each packet their ingress
//     interfaces took in, from the moment the stack took it to the next
//     packet or the end of the softirq (its forwarding, up to the egress
//     transmit), over those packets;
//   - their CPUs': all NET_RX and NET_TX softirq time on the CPUs that
//     did their work (with the receiver's receive work where veth queues
//     it there), over the packets that left the routers.

// costing is a bench's softirq counters and the devices it charges.
type costing struct {
	cpu  *softirq.Counter
	devs *softirq.Devices
	// ingress are the routers' ingress interfaces on the path, by name
	// ("r1:eth0"), as the attribution names them; receiver is the
	// receiver's interface (its name in receiverName).
	ingress      map[string]softirq.Dev
	receiver     softirq.Dev
	receiverName string
	note         string // why a count is missing
}

// openCosting opens the counters and watches the routers' ingress
// interfaces; without BPF the bench goes on without the figures, and
// says why.
func (b *Bench) openCosting() {
	c := &b.cost
	if !caps.Or(b.opts.Caps).BPF() {
		c.note = "no cost per packet: " + rootless.Refuse("counting softirq time (BPF)", "run as root to have it").Error()
		return
	}
	var err error
	if c.cpu, err = softirq.Open(); err != nil {
		c.note = fmt.Sprintf("no cost per packet: %v", err)
		return
	}
	if t := b.t; !b.opts.Duet && t.RatePPS == 0 && t.RateMbps == 0 {
		// A BPF program on every packet costs the router a share of its
		// capacity (about 1 us a forwarded packet here): a run as fast
		// as the engine goes measures that capacity, so it goes without.
		c.note = "no router's own cost per packet at full speed: counting each packet would slow the router (give a rate it holds)"
		return
	}
	if c.devs, err = softirq.OpenDevices(); err != nil {
		c.note = fmt.Sprintf("no router's own cost per packet: %v", err)
		return
	}
	c.ingress = map[string]softirq.Dev{}
	for i, t := range b.meas.targets {
		role := b.meas.roles[i]
		if role != "ingress" && role != "receiver" || b.meas.isRemote(i) {
			continue // on another host, its CPU time is that host's
		}
		dev, err := b.devOf(t.Node, t.Interface)
		if err == nil {
			err = c.devs.Watch(dev)
		}
		if err != nil {
			c.note = fmt.Sprintf("no router's own cost per packet: %v", err)
			c.ingress = nil
			return
		}
		if role == "receiver" {
			c.receiver, c.receiverName = dev, t.Node+":"+t.Interface
			continue
		}
		c.ingress[t.Node+":"+t.Interface] = dev
	}
}

// devOf names interface ifname of node as the attribution does: its
// namespace's inode and its ifindex.
func (b *Bench) devOf(node, ifname string) (softirq.Dev, error) {
	n := b.run.Node(node)
	inode, err := n.NS.Inode()
	if err != nil {
		return softirq.Dev{}, err
	}
	link, err := b.run.Link(spec.Endpoint{Node: node, Interface: ifname})
	if err != nil {
		return softirq.Dev{}, err
	}
	return softirq.Dev{NetNS: uint32(inode), Ifindex: int32(link.Attrs().Index)}, nil
}

// read is the counters now: every CPU's softirq time, and what each
// ingress interface's packets cost so far.
func (c *costing) read() (*softirq.Reading, map[string][]softirq.DevTime, error) {
	if c.cpu == nil {
		return nil, nil, nil
	}
	r, err := c.cpu.Read()
	if err != nil {
		return nil, nil, err
	}
	devs := map[string][]softirq.DevTime{}
	for name, dev := range c.ingress {
		if devs[name], err = c.devs.ReadPerCPU(dev); err != nil {
			return nil, nil, err
		}
	}
	if c.receiverName != "" {
		if devs[receiverKey], err = c.devs.ReadPerCPU(c.receiver); err != nil {
			return nil, nil, err
		}
	}
	return &r, devs, nil
}

func (c *costing) close() {
	// Closing only drops file descriptors: nothing is left to undo.
	if c.devs != nil {
		_ = c.devs.Close()
	}
	if c.cpu != nil {
		_ = c.cpu.Close()
	}
	*c = costing{}
}

// costCPUs are the CPUs whose softirq time is the routers' work: the
// CPUs the placement gave the routers on the path, or every CPU when no
// router is placed (its work then runs wherever the packets arrive,
// mostly the sender's CPU, and the sum of every CPU's softirq time still
// holds it, with the receiver's).
func (b *Bench) costCPUs() (cpus []int, placed bool) {
	for c, roles := range b.place.Roles {
		if slices.ContainsFunc(roles, func(r string) bool { return strings.HasPrefix(r, "router ") }) {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	if len(cpus) > 0 {
		return cpus, true
	}
	return b.allowed, false
}

// threadedRouters names the routers on the path whose receive work runs
// in pinned napi kthreads ("" when none does).
func (b *Bench) threadedRouters(rep *report.Report) string {
	var out []string
	for _, r := range rep.Routers {
		if b.place.NAPI[r.Node] {
			out = append(out, r.Node)
		}
	}
	return strings.Join(out, ", ")
}

// receiverKey is where a reading keeps the receiver's interface, beside
// the routers' ingress interfaces (by their node:interface names).
const receiverKey = "receiver"

// routerCost puts the routers' cost per packet on the report.
func (b *Bench) routerCost(rep *report.Report, before, after hostState) {
	if before.softirq == nil || after.softirq == nil {
		rep.CostNote = b.cost.note
		return
	}
	if len(rep.Routers) == 0 {
		rep.CostNote = "no cost per packet: no router on the path"
		return
	}
	for _, r := range rep.Routers {
		if r.Host != "" && r.Host != b.run.Lab.OnHost() {
			rep.CostNote = fmt.Sprintf("no cost per packet: router %s runs on host %s, whose softirq time (exact, from BPF) is not read from here; its CPUs' share of time is below", r.Node, r.Host)
			return
		}
	}
	cpus, placed := b.costCPUs()
	ns, runs, err := after.softirq.Since(*before.softirq, cpus, softirq.NetRX, softirq.NetTX)
	if err != nil {
		rep.CostNote = fmt.Sprintf("no cost per packet: %v", err)
		return
	}
	c := &report.RouterCost{CPUs: cpus, CPUSoftirqNs: ns, Runs: runs, Placed: placed, Note: b.cost.note, Shared: b.opts.Duet}
	for _, r := range rep.Routers {
		c.Nodes = append(c.Nodes, r.Node)
		c.Forwarded += r.Forwarded
	}
	if threaded := b.threadedRouters(rep); threaded != "" {
		c.CPUNote = fmt.Sprintf("the receive work of %s runs in napi kthreads, which is not NET_RX softirq time (only the softirq raised inside them is): the softirq time over the packets would leave most of it out", threaded)
	} else if c.Forwarded > 0 {
		c.CPUNsPerPacket = float64(ns) / float64(c.Forwarded)
	}
	var router, receiver []softirq.DevTime // per CPU, during the run
	for _, name := range slices.Sorted(maps.Keys(after.devices)) {
		during := since(after.devices[name], before.devices[name])
		if name == receiverKey {
			receiver = during
			continue
		}
		c.Ingress = append(c.Ingress, name)
		router = addPerCPU(router, during)
	}
	r := sum(router)
	c.Ns, c.Packets = r.Ns, r.Packets
	if c.Packets > 0 {
		c.NsPerPacket = float64(c.Ns) / float64(c.Packets)
	}
	if receiver != nil {
		v := sum(receiver)
		c.Receiver, c.ReceiverNs, c.ReceiverPackets = b.cost.receiverName, v.Ns, v.Packets
		if c.ReceiverPackets > 0 {
			c.ReceiverNsPerPacket = float64(c.ReceiverNs) / float64(c.ReceiverPackets)
		}
		c.RelativeCost, c.ReceiverSameCPUShare = relativeCost(router, receiver)
	}
	rep.Cost = c
}

// relativeCost is the routers' cost per packet over the receiver's on
// the same CPUs in the same run: the CPUs that did at least 1% of the
// routers' packets, the receiver's packets there (share: their part of
// all it took in). A CPU's speed moves from one second to the next on
// our machines (8% between 1 s trials, the router's and the receiver's
// cost moving together: correlation 0.98); the ratio cancels it. It is
// 0 when the receiver did less than half its packets on those CPUs
// (the yardstick ran elsewhere).
func relativeCost(router, receiver []softirq.DevTime) (relative, share float64) {
	total, rTotal := sum(receiver), sum(router)
	if total.Packets == 0 || rTotal.Packets == 0 {
		return 0, 0
	}
	var r, v softirq.DevTime
	for cpu, t := range router {
		if 100*t.Packets >= rTotal.Packets && cpu < len(receiver) {
			r, v = r.Add(t), v.Add(receiver[cpu])
		}
	}
	share = float64(v.Packets) / float64(total.Packets)
	if 2*v.Packets < total.Packets || r.Packets == 0 || v.Ns == 0 {
		return 0, share
	}
	return (float64(r.Ns) / float64(r.Packets)) / (float64(v.Ns) / float64(v.Packets)), share
}

// since is, per CPU, what was added to before to make after.
func since(after, before []softirq.DevTime) []softirq.DevTime {
	out := make([]softirq.DevTime, len(after))
	for cpu, a := range after {
		out[cpu] = a
		if cpu < len(before) {
			out[cpu] = a.Sub(before[cpu])
		}
	}
	return out
}

// addPerCPU adds u to t, CPU by CPU.
func addPerCPU(t, u []softirq.DevTime) []softirq.DevTime {
	for len(t) < len(u) {
		t = append(t, softirq.DevTime{})
	}
	for cpu, x := range u {
		t[cpu] = t[cpu].Add(x)
	}
	return t
}

// sum is the time of every CPU.
func sum(per []softirq.DevTime) softirq.DevTime {
	var t softirq.DevTime
	for _, x := range per {
		t = t.Add(x)
	}
	return t
}
