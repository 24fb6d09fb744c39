package report

import (
	"github.com/nslab/nslab/pktgen/measured"
	"time"

	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/pktgen/stall"
)

// Report is one measured run. Its figures balance: Sent + NamedAdded =
// Received + NamedDrops + Unaccounted, every drop named by its place, and
// every packet the path added (an impairment's duplicates) too; on veth
// Unaccounted is 0 (a test provokes overload and checks it).
type Report struct {
	Lab     string `json:"lab"`
	Traffic string `json:"traffic"`
	// Variant is the lab variant it was measured under (bench
	// --variants); "": the lab as deployed, no variants run.
	Variant string `json:"variant,omitempty"`
	// Block is the block of trials it was measured in (bench --variants:
	// "RUN/BLOCK", one trial of each variant back to back): results of
	// one block are a pair.
	Block string `json:"block,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
	Frame int    `json:"frame"` // L2 frame including FCS (with a mix: its largest)
	// LostHosts are the hosts whose hops could not be read any more
	// during the run (a lab that spans hosts): their hops' counters are
	// those of their last reading.
	LostHosts []LostHost `json:"lost_hosts,omitempty"`
	// HostClocks are, for a run whose hops on other hosts were read
	// through their agents, each such host's clock against this one's.
	HostClocks []HostClock `json:"host_clocks,omitempty"`
	// Mix is the run's frame mix as SIZE:WEIGHT words, and MeanFrame its
	// mean size, from which its Mb/s are computed; empty for one size.
	Mix string `json:"mix,omitempty"`
	// Load says, for runs measured at fractions of a rate (LatencyAt),
	// which fraction of which rate this one was.
	Load      string  `json:"load,omitempty"`
	MeanFrame float64 `json:"mean_frame,omitempty"`
	Engine    string  `json:"engine"`
	Reason    string  `json:"reason,omitempty"`
	// OfferedPPS is the rate the run asked for per thread (0: as fast
	// as the engine goes).
	OfferedPPS uint64        `json:"offered_pps,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// Started and Ended are when the engine started and returned (wall
	// clock): runs measured together overlap by them.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// CountedBy says how the receiver counted the run (set when runs are
	// measured together); Shared lists the counters of its path that
	// other runs measured with it cross too.
	CountedBy string   `json:"counted_by,omitempty"`
	Shared    []string `json:"shared,omitempty"`
	// ReceiveWindow is, on a path with impairments or through another
	// host (whose queues this host cannot see), the time the receiver
	// received in (queues and delays keep delivering after the sender
	// stops): from the first to the last rise of its counter, read every
	// 10 ms. The receiver's rate is over it. 0 on other paths.
	ReceiveWindow time.Duration `json:"receive_window_ns,omitempty"`
	// Sent is what the sender interface took: its tx_packets plus its
	// tx_dropped over the run (the engine's own count, when no sender
	// interface is measured). SenderCheck compares it with the engine.
	Sent      uint64  `json:"sent"`
	Received  uint64  `json:"received"` // the receiver's rx, less neighbour frames
	Loss      int64   `json:"loss"`
	LossPct   float64 `json:"loss_pct"`
	PPS       float64 `json:"pps"`        // received / elapsed (or receive window)
	SteadyPPS float64 `json:"steady_pps"` // receiver, steady window
	MbpsL2    float64 `json:"mbps_l2"`    // with FCS
	MbpsL1    float64 `json:"mbps_l1"`    // + preamble and gap (20 bytes)
	SteadyL2  float64 `json:"steady_mbps_l2"`

	// Latency and Sequence are what the receiver's reader measured
	// (Options.Latency); nil without it. SequenceNote says why there is
	// no Sequence when there is a Latency; ReaderMissed counts packets
	// the reader's ring had no room for.
	Latency      *measured.Latency  `json:"latency,omitempty"`
	Sequence     *measured.Sequence `json:"sequence,omitempty"`
	SequenceNote string             `json:"sequence_note,omitempty"`
	ReaderMissed uint64             `json:"reader_missed,omitempty"`
	// ReceivedSizes counts the frames the reader read by size (with
	// FCS), for runs with a frame mix.
	ReceivedSizes map[int]uint64 `json:"received_sizes,omitempty"`

	// Failover is what the run's events (bench --event) did; nil
	// without events.
	Failover *Failover `json:"failover,omitempty"`

	Hops       []HopCounters `json:"hops"`
	Drops      []Drop        `json:"drops"` // by place, each packet once
	NamedDrops uint64        `json:"named_drops"`
	// Added is the packets the path made on its way, by place: copies an
	// impairment sent (netem duplicate). They reach the receiver as well.
	Added       []Drop         `json:"added,omitempty"`
	NamedAdded  uint64         `json:"named_added,omitempty"`
	Unaccount   int64          `json:"unaccounted"` // Loss + NamedAdded - NamedDrops
	SenderCheck SenderCheck    `json:"sender_check"`
	Routers     []RouterCounts `json:"routers"`
	// Conntrack is each router's connection tracking over the run, for
	// routers whose conntrack saw the run.
	Conntrack []ConntrackCounts `json:"conntrack,omitempty"`
	Softnet   []SoftnetCPU      `json:"softnet"` // machine-wide, per CPU
	// Cost is the routers' CPU time per packet they forwarded (nil: not
	// counted, and CostNote says why).
	Cost     *RouterCost `json:"router_cost,omitempty"`
	CostNote string      `json:"router_cost_note,omitempty"`
	CPU      []CPUUse    `json:"cpu"`
	// OtherHosts are the CPUs of the other hosts whose hops the run read
	// (a lab that spans hosts), each read by its agent with those hops.
	OtherHosts []HostUse `json:"other_hosts,omitempty"`
	// Stalls are the stalls of the run's CPUs while the engine ran
	// (package stall), the first of them listed; nil when there was no
	// probe, and StallNote says why.
	Stalls    *stall.Summary `json:"stalls,omitempty"`
	StallList []stall.Stall  `json:"stall_list,omitempty"`
	StallNote string         `json:"stall_note,omitempty"`
	// Bottleneck is the verdict in a line; Verdict has its parts.
	Bottleneck string  `json:"bottleneck"`
	Verdict    Verdict `json:"verdict"`

	Path       []walk.Hop `json:"path"`
	NextHop    string     `json:"next_hop"`
	NextHopMAC string     `json:"next_hop_mac"`
	// Differences are where the kernels of the nodes on the path differ
	// from the lab's file: the run went by the kernels' addresses and
	// routes.
	Differences []string         `json:"differences,omitempty"`
	Env         Env              `json:"environment"`
	Result      *measured.Result `json:"engine_result"`

	Targets []measured.Target `json:"-"`
	Samples []measured.Sample `json:"-"`
	// Fidelity sets, for each impaired interface the run went out of,
	// what the file asked of it against what it delivered.
	Fidelity []LinkFidelity `json:"fidelity,omitempty"`
	// TCP is a run of TCP flows (a traffic run with tcp:); its Sent,
	// Received and balance are then not set (TCP resends what was lost).
	TCP *TCPRun `json:"tcp,omitempty"`
	// Shapers are the rates, in bit/s of frames without FCS, of the
	// measured interfaces whose root qdisc limits them (tbf, netem with a
	// rate), by target ("ns1:veth1").
	Shapers  map[string]uint64 `json:"-"`
	HopRoles []string          `json:"-"` // the role of each of Targets
	// Details asks the table for its long forms (bench --details): how
	// each figure was obtained, softnet_stat's table and the machine's
	// settings. JSON always carries them.
	Details bool `json:"-"`
	// DetailsHint says where the long forms are, after a line cut short
	// ("--details says why"); empty: nothing is said.
	DetailsHint string `json:"-"`
}

// HopCounters is one sampled interface's change over the run.
type HopCounters struct {
	measured.Target
	Role string `json:"role"` // sender, ingress, egress, receiver, switch in/out, measured
	measured.Counters
	// Neighbour frames (ARP, IPv6 neighbour discovery) it received in
	// the run: counted in RxPackets, and in the previous hop's TxPackets,
	// but not the run's.
	Neighbour uint64 `json:"neighbour_frames,omitempty"`
	// RxIncludesDropped: its rx_packets counts what it then dropped too
	// (rx_dropped): a VXLAN interface counts a packet as it decapsulates
	// it, before its receive queue or RPS's backlog can drop it; a veth
	// counts only what it delivered.
	RxIncludesDropped bool `json:"rx_includes_dropped,omitempty"`
	// SentControl: the control frames it sent, counted on their way out
	// where its peer is on another host.
	SentControl uint64 `json:"control_frames_sent,omitempty"`
	// After names the hops on other hosts before this one (a lab that
	// spans hosts): their counters are there, not sampled from here.
	After string `json:"after_other_hosts,omitempty"`
	// Duplicates is its impairment, when that sends copies of what it is
	// handed (netem duplicate): its tx then counts more than it took in.
	Duplicates string `json:"duplicates,omitempty"`
	// In a run with events (bench --event), what the hop's node sent by
	// interfaces off the path (Detour, on its egress hop) and received by
	// them (Joined, on its ingress hop): the traffic that went round
	// while the path was broken. The node's accounting counts them.
	Detour uint64 `json:"detour,omitempty"`
	Joined uint64 `json:"joined,omitempty"`
}

// LostHost is a host whose agent stopped answering during a run: when
// it was first missed, its last reading that was answered, and why.
type LostHost struct {
	Host     string    `json:"host"`
	At       time.Time `json:"at"`
	LastRead time.Time `json:"last_read,omitzero"`
	Why      string    `json:"why"`
}

// HostClock is another host's clock against the bench's: the offset
// measured from the answer of the shortest round trip (its reading taken
// to be in the middle), by the coordinator at its hellos to the agents or
// else by the bench's asks for the host's hops (over Readings answers),
// and Error the most it is off by.
type HostClock struct {
	Host     string        `json:"host"`
	Offset   time.Duration `json:"offset_ns"`
	Error    time.Duration `json:"error_ns"`
	Readings int           `json:"readings,omitempty"`
	By       string        `json:"by"` // who measured it
}

// Drop is packets lost at one place of the path.
type Drop struct {
	Place   string `json:"place"`   // "link ns1:veth1 -> ns2:veth1-peer", "inside router ns2"
	Packets uint64 `json:"packets"` // each lost packet once
	// Counted says which counters saw them ("ns1:veth1 tx_dropped and
	// ns2:veth1-peer rx_dropped (the same packets)").
	Counted string `json:"counted"`
	// Cause is what the machine's counters say about why, "" when they
	// say nothing.
	Cause string `json:"cause,omitempty"`
	Node  string `json:"node"` // the node the packets were entering or crossing
	// Host is that node's host, in a lab that spans hosts whose every
	// hop was read ("" otherwise, or for the underlay between two).
	Host string `json:"host,omitempty"`
	// Segments are, in a TCP run, the data segments lost there: a packet
	// the counters count once may be a GSO packet of several.
	Segments uint64 `json:"segments,omitempty"`
}

// SenderCheck reconciles the engine's count with the sender interface's.
type SenderCheck struct {
	EngineHanded uint64 `json:"engine_handed"` // sent + dropped by the device, as the engine counted
	EngineSent   uint64 `json:"engine_sent"`
	EngineErrors uint64 `json:"engine_errors"`
	Interface    uint64 `json:"interface"`  // tx_packets + tx_dropped of the sender interface
	Difference   int64  `json:"difference"` // Interface - EngineHanded
	Cause        string `json:"cause,omitempty"`
}

// RouterCounts is what one router on the path did with the run's packets.
type RouterCounts struct {
	Node    string `json:"node"`
	Host    string `json:"host,omitempty"` // its host, in a lab that spans hosts whose every hop was read
	Entered uint64 `json:"entered"`        // ingress rx (run packets)
	// Forwarded is what left the router: egress tx (run packets).
	Forwarded uint64 `json:"forwarded"`
	// DroppedAtEgress is what its egress took but could not hand on
	// (tx_dropped: the next node's backlog was full).
	DroppedAtEgress uint64 `json:"dropped_at_egress"`
	// Inside is what entered and never reached the egress (the IP layer
	// dropped it: see Discards); in a run with events, what entered or
	// left by interfaces off the path counts too (HopCounters.Detour).
	Inside int64 `json:"inside"`
	// DuplicatedAtEgress is the copies its egress's impairment sent
	// (netem duplicate): what left beyond what entered.
	DuplicatedAtEgress uint64            `json:"duplicated_at_egress,omitempty"`
	ForwDatagrams      uint64            `json:"ip_forw_datagrams"` // IP MIB: handed to output
	Discards           map[string]uint64 `json:"ip_discards"`       // IP MIB counters that count drops
	// XDP is its XDP fast path's counters over the run (nil: none):
	// every frame its interfaces took, forwarded, passed to the stack or
	// dropped by the program.
	XDP *XDPCounts `json:"xdp,omitempty"`
}

// XDPCounts are a router's XDP fast path over a run: what it forwarded,
// passed to the stack (and why) and dropped; forwarded + passed + dropped
// is every frame its interfaces took, the run's and others.
type XDPCounts struct {
	Forwarded uint64            `json:"forwarded"`
	Passed    uint64            `json:"passed"`
	Dropped   uint64            `json:"dropped"`
	Why       map[string]uint64 `json:"why,omitempty"` // reason -> frames, those that moved
}

// SoftnetCPU is one CPU's /proc/net/softnet_stat change over the run. The
// file is machine-wide: it counts every namespace's packets on that CPU.
type SoftnetCPU struct {
	CPU         int    `json:"cpu"`
	Processed   uint64 `json:"processed"`
	Dropped     uint64 `json:"dropped"`      // backlog full
	TimeSqueeze uint64 `json:"time_squeeze"` // NAPI budget ran out
	ReceivedRPS uint64 `json:"received_rps"` // packets steered here by RPS
}

// HostUse is another host's CPUs over a run: its softnet_stat and CPU
// time, machine-wide, from its agent's readings at the baseline and at
// the end (or its last, for a host lost during the run), each CPU with
// what the lab places there of the path.
type HostUse struct {
	Host    string       `json:"host"`
	Softnet []SoftnetCPU `json:"softnet"`
	CPU     []CPUUse     `json:"cpu"`
}

// CPUUse is one CPU's time during a run, in percent, and what the
// placement put there.
type CPUUse struct {
	CPU     string   `json:"cpu"`
	N       int      `json:"n"`
	User    float64  `json:"usr"`
	System  float64  `json:"sys"`
	IRQ     float64  `json:"irq"`
	SoftIRQ float64  `json:"soft"`
	Steal   float64  `json:"steal"` // taken by the hypervisor, on a VM
	Idle    float64  `json:"idle"`
	Roles   []string `json:"roles,omitempty"` // "sender ns1", "router ns2", "nslab sampler"
}

// Busy is the CPU's non-idle share.
func (c CPUUse) Busy() float64 { return 100 - c.Idle }

// Verdict is what limited a run, with the measurements that say so.
type Verdict struct {
	// Limit is sender, router, receiver, switch, link, shaper, offered
	// rate, or unknown.
	Limit    string   `json:"limit"`
	Node     string   `json:"node,omitempty"`
	Host     string   `json:"host,omitempty"` // the node's host, in a lab that spans hosts
	CPUs     []int    `json:"cpus,omitempty"`
	Evidence []string `json:"evidence"`
	// Bursts: the CPUs that dropped were under 60% busy, so the drops
	// came from stalls, not from load.
	Bursts bool `json:"bursts,omitempty"`
}

// frameBytes is the mean size of the run's frames, with FCS.
func (r *Report) frameBytes() float64 {
	if r.MeanFrame > 0 {
		return r.MeanFrame
	}
	return float64(r.Frame)
}
