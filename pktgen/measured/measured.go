// Package measured holds what a run measured, as data: an engine's
// result, interfaces' counters and samples of them, the receiver's
// latency and sequence accounting, TCP flows' readings, and the names of
// the IP MIB's discard counters. It reads nothing from the kernel and
// imports nothing of nslab's, so that reports, plots and results files
// are read without the deployer, netlink or nftables (the packages that
// measure keep aliases of these types).
package measured

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Result is what an engine sent.
type Result struct {
	Engine  string        // which engine ran
	Reason  string        // why it was chosen
	Frame   int           // L2 frame size including FCS
	Sent    uint64        // packets the device accepted
	Errors  uint64        // packets the device took but dropped (NET_XMIT_DROP), or refused
	Elapsed time.Duration // from the first to the last packet (longest thread)
	PPS     float64       // Sent/Elapsed, as the engine reports it
	Mbps    float64       // PPS*8*(Frame-4)/1e6: as pktgen, without FCS, preamble or gap
	Threads []ThreadResult
	Stopped bool // ended by duration or cancel rather than by count
	// Behind is the longest schedule time a paced thread gave up because
	// it did not run (a stalled CPU: more than 1 ms between two of its
	// turns): it starts its schedule again from where it is instead of
	// sending a burst, as kernel pktgen does. A paced run offers
	// RatePPS × (Duration − Behind) packets. A thread too slow for its
	// rate, falling behind a little at every turn, is not counted here.
	Behind time.Duration
}

// Handed is what the engine gave the sender's device: accepted, or taken
// and dropped by it.
func (r *Result) Handed() uint64 { return r.Sent + r.Errors }

// ThreadResult is one sending thread's share.
type ThreadResult struct {
	Name    string // e.g. "veth1@0"
	CPU     int    // the CPU it was pinned to, -1: not pinned
	Sent    uint64
	Errors  uint64
	Elapsed time.Duration
	PPS     float64
	Mbps    float64
	Behind  time.Duration // see Result.Behind
}

// Target is one interface to sample.
type Target struct {
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Interface string `json:"interface"`
	// Host is the host the node runs on, in a lab that spans hosts whose
	// bench reads other hosts' hops through their agents; "" otherwise.
	Host string `json:"host,omitempty"`
}

func (t Target) String() string { return t.Node + ":" + t.Interface }

// Counters are one interface's counters at one moment.
type Counters struct {
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxDropped uint64 `json:"rx_dropped"`
	TxDropped uint64 `json:"tx_dropped"`
	RxErrors  uint64 `json:"rx_errors"`
	TxErrors  uint64 `json:"tx_errors"`
	RxMissed  uint64 `json:"rx_missed"`
	// The interface's own root qdisc (an impairment), when it has one:
	// packets it dropped (netem's loss, a full queue) and packets it
	// holds now. Packets it drops never reach the device's counters.
	QdiscDrops  uint64 `json:"qdisc_drops,omitempty"`
	QdiscQueued uint64 `json:"qdisc_queued,omitempty"`
	// QdiscOverlimits: times its rate held a packet back (a shaper's);
	// QdiscBacklog: the bytes it holds now.
	QdiscOverlimits uint64 `json:"qdisc_overlimits,omitempty"`
	QdiscBacklog    uint64 `json:"qdisc_backlog,omitempty"`
}

// Sub returns c - o, counter by counter; QdiscQueued and QdiscBacklog
// are c's (levels, not counts).
func (c Counters) Sub(o Counters) Counters {
	return Counters{RxPackets: c.RxPackets - o.RxPackets, TxPackets: c.TxPackets - o.TxPackets, RxBytes: c.RxBytes - o.RxBytes, TxBytes: c.TxBytes - o.TxBytes,
		RxDropped: c.RxDropped - o.RxDropped, TxDropped: c.TxDropped - o.TxDropped, RxErrors: c.RxErrors - o.RxErrors, TxErrors: c.TxErrors - o.TxErrors,
		RxMissed:   c.RxMissed - o.RxMissed,
		QdiscDrops: uint64(uint32(c.QdiscDrops) - uint32(o.QdiscDrops)), QdiscQueued: c.QdiscQueued, // the kernel's qdisc counters are 32 bits
		QdiscOverlimits: uint64(uint32(c.QdiscOverlimits) - uint32(o.QdiscOverlimits)), QdiscBacklog: c.QdiscBacklog}
}

// Sample is every target's counters at one moment.
type Sample struct {
	At       time.Duration `json:"at"` // since the sampler started, monotonic
	Counters []Counters    `json:"counters"`
}

// Rate is one interface's traffic over an interval.
type Rate struct {
	RxPPS, TxPPS   float64
	RxMbps, TxMbps float64 // counter bytes: L2 without FCS
	Drops          uint64  // rx and tx dropped, rx missed, qdisc drops
}

// Rates computes every target's rates between two samples.
func Rates(a, b Sample) []Rate {
	dt := (b.At - a.At).Seconds()
	out := make([]Rate, len(a.Counters))
	if dt <= 0 {
		return out
	}
	for i := range a.Counters {
		d := b.Counters[i].Sub(a.Counters[i])
		out[i] = Rate{float64(d.RxPackets) / dt, float64(d.TxPackets) / dt, float64(d.RxBytes) * 8 / dt / 1e6, float64(d.TxBytes) * 8 / dt / 1e6,
			d.RxDropped + d.TxDropped + d.RxMissed + d.QdiscDrops}
	}
	return out
}

// Steady returns the first and last samples of the steady window: the
// samples of a run without its first and last intervals, which the run
// only partly covers. ok is false with fewer than four samples.
func Steady(samples []Sample) (first, last Sample, ok bool) {
	if len(samples) < 4 {
		return Sample{}, Sample{}, false
	}
	return samples[1], samples[len(samples)-2], true
}

// Latency is the one-way latency of the packets a run measured, in
// nanoseconds. Its JSON names are the interface scripts rely on.
type Latency struct {
	Method   string  `json:"method"`  // how it was measured
	Samples  uint64  `json:"samples"` // packets measured
	MinNs    int64   `json:"min_ns"`
	P50Ns    int64   `json:"p50_ns"`
	P90Ns    int64   `json:"p90_ns"`
	P99Ns    int64   `json:"p99_ns"`
	P999Ns   int64   `json:"p999_ns"`
	MaxNs    int64   `json:"max_ns"`
	MeanNs   float64 `json:"mean_ns"`
	JitterNs float64 `json:"jitter_ns"` // RFC 3550 interarrival jitter, in arrival order
	// ResolutionNs is the send timestamp's resolution: 1000 for kernel
	// pktgen (microseconds), 1 for the userspace engine where the frame
	// has room for its nanoseconds.
	ResolutionNs int64 `json:"resolution_ns"`
	// Negative counts packets received before they were sent by the
	// clocks (a clock stepped): they are left out.
	Negative uint64 `json:"negative,omitempty"`
	// Histogram is the whole latency histogram in HdrHistogram's
	// interchange form (V2, compressed, base64: any HdrHistogram library
	// decodes it; values in nanoseconds); nslab-plot draws its CDF.
	Histogram string `json:"histogram,omitempty"`
}

// Sequence is the accounting by sequence number. Its JSON names are the
// interface scripts rely on.
type Sequence struct {
	UniqueReceived uint64 `json:"unique_received"`
	Lost           uint64 `json:"lost"`       // sent, and never received
	Duplicates     uint64 `json:"duplicates"` // received again
	// Reordered counts packets that arrived with a sequence number below
	// the highest seen before them (RFC 4737 section 3), duplicates not
	// included.
	Reordered uint64 `json:"reordered"`
	// LongestGap is the most consecutive sequence numbers skipped between
	// a packet and the next one to arrive above it, and the time between
	// their arrivals: how long the path was broken.
	LongestGapPackets uint64 `json:"longest_gap_packets"`
	LongestGapNs      int64  `json:"longest_gap_ns"`
	// Outside counts packets whose sequence number the sender never
	// used in this run (another run's packets, still on the path).
	Outside uint64 `json:"outside,omitempty"`
	// LossRuns counts the runs of consecutive lost sequence numbers by
	// their length (a histogram: length -> runs), and MeanLossRun is
	// their mean length: loss in bursts shows as long runs.
	LossRuns    map[uint64]uint64 `json:"loss_runs,omitempty"`
	MeanLossRun float64           `json:"mean_loss_run,omitempty"`
}

// DecodeHistogram reads a Latency's Histogram back.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	return hdrhistogram.Decode([]byte(s))
}

// Point is one sample of a flow's sending end.
type Point struct {
	At      time.Duration `json:"at"`          // since the flows started
	Acked   uint64        `json:"bytes_acked"` // so far
	Retrans uint32        `json:"retrans"`     // segments retransmitted so far
	SRTT    time.Duration `json:"srtt"`
	Cwnd    uint32        `json:"cwnd"` // segments
}

// Info is what a report keeps of one end's TCP_INFO. Its byte counts are
// sequence numbers: BytesAcked holds the SYN and the FIN as a byte each,
// BytesRecv the FIN.
type Info struct {
	SegsOut      uint32        `json:"segs_out"`
	SegsIn       uint32        `json:"segs_in"`
	DataSegsOut  uint32        `json:"data_segs_out"`
	DataSegsIn   uint32        `json:"data_segs_in"`
	TotalRetrans uint32        `json:"total_retrans"`
	BytesSent    uint64        `json:"bytes_sent"`
	BytesRetrans uint64        `json:"bytes_retrans"`
	BytesAcked   uint64        `json:"bytes_acked"`
	BytesRecv    uint64        `json:"bytes_received"`
	SRTT         time.Duration `json:"srtt"`
	RTTVar       time.Duration `json:"rttvar"`
	MinRTT       time.Duration `json:"min_rtt"`
	Cwnd         uint32        `json:"cwnd"`
	MSS          uint32        `json:"mss"`
	Reordering   uint32        `json:"reordering"`
	DSACKDups    uint32        `json:"dsack_dups"`
	RTOs         uint16        `json:"rtos"`
	// Busy is how long the connection had data to send; RwndLimited and
	// SndbufLimited how much of that the receiver's window and the send
	// buffer held it back.
	Busy          time.Duration `json:"busy"`
	RwndLimited   time.Duration `json:"rwnd_limited"`
	SndbufLimited time.Duration `json:"sndbuf_limited"`
}

// IPDiscards are the IP MIB counters (/proc/net/snmp and snmp6 of a
// namespace) that count packets a router dropped.
var IPDiscards = []string{"InHdrErrors", "InAddrErrors", "InUnknownProtos", "InDiscards", "OutDiscards", "OutNoRoutes", "InNoRoutes",
	"Ip6InHdrErrors", "Ip6InTooBigErrors", "Ip6InNoRoutes", "Ip6InAddrErrors", "Ip6InUnknownProtos", "Ip6InTruncatedPkts",
	"Ip6InDiscards", "Ip6OutDiscards", "Ip6OutNoRoutes", NeighDiscards}

// NeighDiscards is the key of the packets a router dropped for a
// neighbour that never resolved (see kstat.RouterCounters).
const NeighDiscards = "NeighUnresolvedDiscards"
