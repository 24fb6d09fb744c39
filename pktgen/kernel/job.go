// Package kernel drives the kernel's packet generator (net/core/pktgen.c)
// inside one network namespace: a typed Job covering what pktgen offers,
// validation with messages that name the fix, rendering to the exact list of
// /proc/net/pktgen writes, a controller that performs them from a thread in
// the sender's namespace, parsing of the kernel's result files, and a
// standalone shell script of the same run for people who want to learn or run
// it by hand.
//
// Sizes follow what users and their test reports call "64-byte packets": Frame is the
// L2 frame including the 4-byte FCS; pktgen's pkt_size is Frame-4.
package kernel

import (
	"net"
	"net/netip"
	"time"

	"github.com/nslab/nslab/pktgen/engine"
)

// FCS is the Ethernet frame check sequence, counted in frame sizes but not
// in pktgen's pkt_size.
const FCS = engine.FCS

// Job is one pktgen run: one sender device, on one or more kernel threads.
// Zero values mean pktgen's defaults.
type Job struct {
	Device string // interface in the sender's namespace

	// Threads is the number of kpktgend threads, each sending on its own
	// device entry Device@N (pktgen's multiqueue naming). 0 or 1 with
	// FirstThread 0 uses one entry named Device on kpktgend_0.
	Threads     int
	FirstThread int // number of the first kpktgend thread
	// CPUs, when set, names the kpktgend threads instead (kpktgend_N runs
	// on CPU N): one device entry Device@N per CPU listed, in order.
	CPUs []int

	Count    uint64        // packets per thread; 0 with Duration: until stopped
	Duration time.Duration // stop after this long (pktgen has no duration: the controller stops it)

	Frame    int          // L2 frame size incl. FCS; pkt_size = Frame-4
	FrameMin int          // with FrameMax: a size range (sequential, or random with TXSIZE_RND)
	FrameMax int          //
	IMIX     []IMIXWeight // frame size distribution (imix_weights)

	Delay    time.Duration // gap between packets
	RateMbps uint64        // pktgen "rate": sets the delay from the size
	RatePPS  uint64        // pktgen "ratep"

	CloneSKB int    // send each skb this many more times (not on veth)
	Burst    int    // skbs per xmit call (not on veth in start_xmit mode)
	Frags    int    // number of fragments per packet
	XmitMode string // "", "start_xmit", "queue_xmit" or "netif_receive"

	QueueMapMin, QueueMapMax *int // tx queue range

	DstIP, DstIPMax netip.Addr // destination, or range with DstIPMax (IPv4 or IPv6)
	SrcIP, SrcIPMax netip.Addr // source, or range
	// ThreadSrcIP gives thread i (from FirstThread) its own source address
	// (one flow per thread, as samples/pktgen sample05).
	ThreadSrcIP []netip.Addr

	DstMAC, SrcMAC           net.HardwareAddr
	DstMACCount, SrcMACCount int

	UDPSrcMin, UDPSrcMax int // 0: pktgen's default port 9
	UDPDstMin, UDPDstMax int

	Flows   int // concurrent flows
	FlowLen int // packets per flow before the next

	TOS          *uint8 // IPv4 DSCP+ECN byte
	TrafficClass *uint8 // IPv6 traffic class
	VLAN         *VLAN
	SVLAN        *VLAN
	MPLS         []uint32 // label stack entries (label<<12 | tc<<9 | s<<8 | ttl)
	SKBPriority  *uint32
	Node         *int // NUMA node for skb allocation (sets flag NODE)

	Flags []string // pktgen flag names, e.g. IPSRC_RND, NO_TIMESTAMP

	// DeviceKind is the rtnetlink kind of Device ("veth", "bridge", "" for
	// a physical NIC), used by validation: virtual devices refuse clone_skb
	// and burst. DeviceMTU, if set, bounds the frame size.
	DeviceKind string
	DeviceMTU  int
}

// IMIXWeight is one entry of a frame size distribution.
type IMIXWeight struct {
	Frame  int // L2 frame size incl. FCS
	Weight int
}

// VLAN is an 802.1Q tag.
type VLAN struct {
	ID       int // 0..4095
	Priority int // 0..7
	CFI      int // 0..1
}

// Flags pktgen knows (net/core/pktgen.c PKT_FLAGS). IPV6 is set by pktgen
// itself when an IPv6 destination is given.
var knownFlags = []string{
	"IPV6", "IPSRC_RND", "IPDST_RND", "TXSIZE_RND", "UDPSRC_RND", "UDPDST_RND", "UDPCSUM",
	"NO_TIMESTAMP", "MPLS_RND", "QUEUE_MAP_RND", "QUEUE_MAP_CPU", "FLOW_SEQ", "IPSEC",
	"MACSRC_RND", "MACDST_RND", "VID_RND", "SVID_RND", "NODE", "SHARED",
}

// KnownFlags returns the flag names pktgen accepts.
func KnownFlags() []string { return append([]string(nil), knownFlags...) }

// Xmit modes.
const (
	XmitStart        = "start_xmit"
	XmitQueue        = "queue_xmit"
	XmitNetifReceive = "netif_receive"
)

// DeviceName returns the pktgen device entry of thread i (0-based from
// FirstThread): Device, or Device@N when the job uses several threads.
func (j *Job) DeviceName(i int) string {
	if j.threads() == 1 && j.FirstThread == 0 && len(j.CPUs) == 0 {
		return j.Device
	}
	return j.Device + "@" + itoa(j.ThreadNumbers()[i])
}

// ThreadNumbers returns the kpktgend numbers the job uses.
func (j *Job) ThreadNumbers() []int {
	if len(j.CPUs) > 0 {
		return append([]int(nil), j.CPUs...)
	}
	out := make([]int, j.threads())
	for i := range out {
		out[i] = j.FirstThread + i
	}
	return out
}

func (j *Job) threads() int {
	if len(j.CPUs) > 0 {
		return len(j.CPUs)
	}
	if j.Threads < 1 {
		return 1
	}
	return j.Threads
}

func (j *Job) hasFlag(f string) bool {
	for _, x := range j.Flags {
		if x == f {
			return true
		}
	}
	return false
}
