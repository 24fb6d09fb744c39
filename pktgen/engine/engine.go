// Package engine is the interface between nslab's traffic runs and the
// engines that generate packets: kernel pktgen, and a userspace engine for
// kernels without it. A job goes in, a result comes out, a context cancels.
// Nothing here is specific to one engine.
package engine

import (
	"context"
	"github.com/nslab/nslab/pktgen/measured"
	"net"
	"net/netip"
	"time"

	"github.com/nslab/nslab/topology/frame"
	"github.com/nslab/nslab/topology/ns"
)

// Engine generates the traffic of a job.
type Engine interface {
	// Name says which engine this is, for reports ("kernel pktgen").
	Name() string
	// Run sends the job's traffic and returns what was sent. Cancelling
	// ctx stops the run; the result then counts what was really sent and
	// the error wraps ctx.Err().
	Run(ctx context.Context, job Job) (*Result, error)
}

// Job is the traffic of one run, as any engine understands it.
type Job struct {
	// Sender is the sender's network namespace, open; the caller owns it
	// and keeps it open for the run. Engines enter it, never by name.
	Sender    *ns.NS
	Interface string // the sender interface in it

	Count    uint64        // packets per thread; 0 with Duration: until the duration ends
	Duration time.Duration // 0: until Count

	Frame    int // L2 frame size including the 4-byte FCS
	FrameMax int // with Frame: sizes Frame..FrameMax
	// Mix, when set, gives every frame its size from a weighted mix
	// (IMIX); Frame is then its largest size.
	Mix      []MixPart
	RatePPS  uint64 // per thread; 0: as fast as possible
	RateMbps uint64 // per thread, counting frames without FCS (as pktgen)
	Threads  int    // 0 or 1: one
	// CPUs pins thread i to CPUs[i] (for kernel pktgen: thread i is
	// kpktgend_CPUs[i]); its length is the thread count. Empty: threads
	// are not pinned.
	CPUs []int

	DstIP, DstIPMax netip.Addr       // destination, or a range
	SrcIP, SrcIPMax netip.Addr       // SrcIP invalid: the interface's address
	DstMAC, SrcMAC  net.HardwareAddr // DstMAC: the next hop's MAC
	UDPSrc, UDPDst  PortRange
	Random          Random // ranges walked at random instead of in order
	Flows, FlowLen  int    // concurrent flows, packets per flow

	// Options are settings of one engine ("clone_skb" for pktgen, "qdisc"
	// for the userspace engine). An engine refuses the ones it does not
	// know, so nothing asked for is silently ignored.
	Options map[string]string
}

// ThreadCount is the number of sending threads the job asks for.
func (j Job) ThreadCount() int {
	if len(j.CPUs) > 0 {
		return len(j.CPUs)
	}
	return max(1, j.Threads)
}

// Namespace names the sender's namespace, for messages.
func (j Job) Namespace() string {
	if j.Sender == nil {
		return "(no namespace)"
	}
	return j.Sender.Name
}

// MeanFrame is the job's mean frame size in bytes, with FCS: its mix's
// weighted mean, or Frame.
func (j Job) MeanFrame() float64 {
	var bytes, n int
	for _, p := range j.Mix {
		bytes, n = bytes+p.Size*p.Weight, n+p.Weight
	}
	if n == 0 {
		return float64(j.Frame)
	}
	return float64(bytes) / float64(n)
}

// MixPart is one size of a frame mix: Weight frames of Size bytes (with
// FCS) per cycle of the mix.
type MixPart struct{ Size, Weight int }

// Random says which ranges are walked at random.
type Random struct {
	Size, SrcIP, DstIP, SrcPort, DstPort bool
}

// PortRange is an inclusive range of UDP ports; zero: the engine's default.
type PortRange struct{ Min, Max int }

// Result is what an engine sent (package measured: the report reads it
// without the engines).
type Result = measured.Result

// ThreadResult is one sending thread's share.
type ThreadResult = measured.ThreadResult

// FirstSeq is the sequence number of a sending thread's first packet in
// a run, in both engines: kernel pktgen starts every run at 1
// (pktgen_clear_counters), and the userspace engine does as it does.
const FirstSeq = 1

// FCS, HeaderBytes and MinFrame are topology/frame's rules, named here
// for the engines' callers.
const FCS = frame.FCS

// HeaderBytes is frame.HeaderBytes.
func HeaderBytes(ipv6 bool) int { return frame.HeaderBytes(ipv6) }

// MinFrame is frame.Min.
func MinFrame(ipv6 bool) int { return frame.Min(ipv6) }
