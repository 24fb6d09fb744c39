package watch

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
)

// View is what happened between two snapshots, as the live views show
// it: rates per second over the interval, and counts of drops in it.
type View struct {
	Lab        string              `json:"lab"`
	Time       time.Time           `json:"time"`
	Interval   float64             `json:"interval"` // s between the two readings of the interfaces
	Interfaces []Interface         `json:"interfaces"`
	CPU        []report.CPUUse     `json:"cpu"`
	Softnet    []report.SoftnetCPU `json:"softnet"`
	Nodes      []Node              `json:"nodes"`
	TCP        []TCPConn           `json:"tcp"`              // the connections that moved data in the interval, the fastest first
	NoTCP      string              `json:"no_tcp,omitempty"` // why TCP lists none: the kernel cannot list them
	Bench      *BenchStatus        `json:"bench,omitempty"`
}

// TCPConn is one TCP connection of a node over the interval: what it sent
// (bytes acknowledged) and received per second, the segments it
// retransmitted in the interval, and its congestion window and smoothed
// RTT now (TCP_INFO through sock_diag, as ss -ti shows them).
type TCPConn struct {
	Node     string  `json:"node"`
	Local    string  `json:"local"`
	Remote   string  `json:"remote"`
	State    string  `json:"state"`
	SendMbps float64 `json:"send_mbps"`
	RecvMbps float64 `json:"recv_mbps"`
	Retrans  uint32  `json:"retrans"`
	Cwnd     uint32  `json:"cwnd"`
	SRTTms   float64 `json:"srtt_ms"`
}

// Interface is one interface over the interval: its rates (counter
// bytes: L2 without FCS), the packets dropped in it (rx and tx dropped,
// rx missed; its qdisc's drops apart), and its counters now.
type Interface struct {
	Node       string          `json:"node"`
	Interface  string          `json:"interface"`
	RxPPS      float64         `json:"rx_pps"`
	TxPPS      float64         `json:"tx_pps"`
	RxMbps     float64         `json:"rx_mbps"`
	TxMbps     float64         `json:"tx_mbps"`
	RxDrops    uint64          `json:"rx_drops"`
	TxDrops    uint64          `json:"tx_drops"`
	QdiscDrops uint64          `json:"qdisc_drops"`
	Counters   sample.Counters `json:"counters"`
}

// Drops are all the interface's drops in the interval.
func (i Interface) Drops() uint64 { return i.RxDrops + i.TxDrops + i.QdiscDrops }

// Node is one node over the interval: datagrams it forwarded per second,
// packets its IP layer discarded (the IP MIB's discard counters), its
// connection tracking (entries now; drops and failed inserts in the
// interval; nil without conntrack or when it tracks nothing), and the
// busy share of its CPUs (the placement's; every CPU when unplaced).
type Node struct {
	Node         string            `json:"node"`
	ForwardedPPS float64           `json:"forwarded_pps"`
	Discards     uint64            `json:"discards"`
	Conntrack    map[string]uint64 `json:"conntrack,omitempty"`
	CPUs         string            `json:"cpus"` // kernel list format, or "all"
	Busy         float64           `json:"busy_pct"`
	// Placed: the node's receive work is placed on CPUs, so Busy is
	// theirs; unplaced, it runs on whichever CPU sends to it, and Busy is
	// every CPU's average, which says nothing of this node.
	Placed bool `json:"placed"`
	// Stopped: nslab node stop stopped the node (its links down, its
	// processes stopped).
	Stopped bool `json:"stopped,omitempty"`
}

// conntrackShown are the conntrack statistics a view shows: entries is a
// level, the others are counted over the interval.
var conntrackShown = []string{"entries", "drop", "early_drop", "insert_failed", "invalid"}

// Delta is the view of the interval from a to b.
func (w *Lab) Delta(a, b *Snapshot) *View {
	v := &View{Lab: w.Name, Time: b.Time, Interval: (b.Interfaces.At - a.Interfaces.At).Seconds(), Bench: b.Bench, NoTCP: b.NoTCP,
		CPU: report.CPUUses(a.CPU, b.CPU), Softnet: report.SoftnetUses(a.Softnet, b.Softnet)}
	for i, r := range sample.Rates(a.Interfaces, b.Interfaces) {
		t, c := w.targets[i], b.Interfaces.Counters[i]
		d := c.Sub(a.Interfaces.Counters[i])
		v.Interfaces = append(v.Interfaces, Interface{Node: t.Node, Interface: t.Interface, RxPPS: r.RxPPS, TxPPS: r.TxPPS, RxMbps: r.RxMbps, TxMbps: r.TxMbps,
			RxDrops: d.RxDropped + d.RxMissed, TxDrops: d.TxDropped, QdiscDrops: d.QdiscDrops, Counters: c})
	}
	for _, n := range w.Spec.Nodes {
		x, okA := a.Nodes[n.Name]
		y, okB := b.Nodes[n.Name]
		if okA && okB {
			node := w.node(n.Name, x, y, v)
			node.Stopped = b.Stopped[n.Name]
			v.Nodes = append(v.Nodes, node)
		}
		v.TCP = append(v.TCP, tcpConns(n.Name, a.TCP[n.Name], b.TCP[n.Name], v.Interval)...)
	}
	slices.SortStableFunc(v.TCP, func(x, y TCPConn) int { return cmp.Compare(max(y.SendMbps, y.RecvMbps), max(x.SendMbps, x.RecvMbps)) })
	return v
}

// tcpConns are node's connections that moved data or retransmitted
// between readings a and b, seconds apart; one new since a counts from
// its start.
func tcpConns(node string, a, b []kstat.TCPSocket, seconds float64) []TCPConn {
	if seconds <= 0 {
		return nil
	}
	before := map[[2]netip.AddrPort]kstat.TCPSocket{}
	for _, s := range a {
		before[[2]netip.AddrPort{s.Local, s.Remote}] = s
	}
	var out []TCPConn
	for _, s := range b {
		p := before[[2]netip.AddrPort{s.Local, s.Remote}]
		if p.BytesAcked > s.BytesAcked || p.BytesReceived > s.BytesReceived { // the same ends, another connection
			p = kstat.TCPSocket{}
		}
		c := TCPConn{Node: node, Local: s.Local.String(), Remote: s.Remote.String(), State: s.State,
			SendMbps: float64(s.BytesAcked-p.BytesAcked) * 8 / seconds / 1e6, RecvMbps: float64(s.BytesReceived-p.BytesReceived) * 8 / seconds / 1e6,
			Retrans: s.Retrans - min(p.Retrans, s.Retrans), Cwnd: s.Cwnd, SRTTms: float64(s.SRTT.Microseconds()) / 1e3}
		if c.SendMbps > 0 || c.RecvMbps > 0 || c.Retrans > 0 {
			out = append(out, c)
		}
	}
	return out
}

// node is one node's part of view v.
func (w *Lab) node(name string, a, b NodeCounters, v *View) Node {
	n := w.Spec.Node(name)
	out := Node{Node: name, CPUs: "all"}
	if v.Interval > 0 {
		fw := b.MIB[kstat.ForwardedKey(false)] - a.MIB[kstat.ForwardedKey(false)] + b.MIB[kstat.ForwardedKey(true)] - a.MIB[kstat.ForwardedKey(true)]
		out.ForwardedPPS = float64(fw) / v.Interval
	}
	for _, k := range kstat.IPDiscards {
		out.Discards += b.MIB[k] - a.MIB[k]
	}
	if b.Conntrack != nil && (n.NAT != nil || b.Conntrack["entries"] > 0) {
		out.Conntrack = map[string]uint64{}
		for _, k := range conntrackShown {
			out.Conntrack[k] = b.Conntrack[k] - a.Conntrack[k]
		}
		out.Conntrack["entries"] = b.Conntrack["entries"]
	}
	var busy, count float64
	for _, c := range v.CPU {
		if !n.Placed() || n.CPUs.Contains(c.N) {
			busy, count = busy+c.Busy(), count+1
		}
	}
	if n.Placed() {
		out.CPUs, out.Placed = n.CPUs.String(), true
	}
	if count > 0 {
		out.Busy = busy / count
	}
	return out
}

// Sort orders the interfaces by key: "node" (the file's order of nodes,
// each node's interfaces as the kernel lists them), "rx" or "tx" (packet
// rate, highest first) or "drops" (highest first).
func (v *View) Sort(key string) {
	by := map[string]func(Interface) float64{
		"rx": func(i Interface) float64 { return i.RxPPS }, "tx": func(i Interface) float64 { return i.TxPPS },
		"drops": func(i Interface) float64 { return float64(i.Drops()) },
	}[key]
	if by == nil {
		return // "node": Delta's order
	}
	slices.SortStableFunc(v.Interfaces, func(x, y Interface) int { return cmp.Compare(by(y), by(x)) })
}

// SortKeys are the keys Sort takes, in the order a key press cycles them.
var SortKeys = []string{"node", "rx", "tx", "drops"}

// HostView is one host's view of its part of a lab that spans hosts.
type HostView struct {
	Host string
	View *View
}

// Join is one view of a lab that spans hosts from each host's view of
// its part: the interfaces, nodes and TCP connections of every host (a
// node is on one host, so none repeats), and each host's CPUs and
// softnet named HOST/cpuN, side by side (Softnet[i] is CPU[i]'s; a host
// whose softnet lists fewer CPUs gets empty ones). Its time is the
// latest reading's, its interval the longest: each host read its own.
func Join(lab string, views []HostView) *View {
	out := &View{Lab: lab, Interfaces: []Interface{}, CPU: []report.CPUUse{}, Softnet: []report.SoftnetCPU{}, Nodes: []Node{}, TCP: []TCPConn{}}
	var noTCP []string
	for _, hv := range views {
		v := hv.View
		if v.Time.After(out.Time) {
			out.Time = v.Time
		}
		out.Interval = max(out.Interval, v.Interval)
		out.Interfaces = append(out.Interfaces, v.Interfaces...)
		out.Nodes = append(out.Nodes, v.Nodes...)
		out.TCP = append(out.TCP, v.TCP...)
		for i, c := range v.CPU {
			c.CPU = hv.Host + "/" + c.CPU
			out.CPU = append(out.CPU, c)
			sn := report.SoftnetCPU{CPU: i}
			if i < len(v.Softnet) {
				sn = v.Softnet[i]
			}
			out.Softnet = append(out.Softnet, sn)
		}
		if v.NoTCP != "" {
			noTCP = append(noTCP, "host "+hv.Host+": "+v.NoTCP)
		}
		if v.Bench != nil && out.Bench == nil {
			out.Bench = v.Bench
		}
	}
	out.NoTCP = strings.Join(noTCP, "; ")
	return out
}
