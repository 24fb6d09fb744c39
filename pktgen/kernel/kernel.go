package kernel

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// Engine runs engine jobs with the kernel's pktgen.
type Engine struct{}

var _ engine.Engine = Engine{}

// Name is how results name this engine.
const Name = "kernel pktgen"

// Name implements engine.Engine.
func (Engine) Name() string { return Name }

// kernelOptions are the engine options the kernel engine takes, each a
// pktgen setting of the same name ("flags" is a comma-separated list).
var kernelOptions = []string{"clone_skb", "burst", "frags", "xmit_mode", "flags"}

// JobFor turns an engine job into a pktgen job for a device of the given
// kind and MTU. The packets carry pktgen's timestamp header (so receivers
// can check sequence numbers); UDP ports default to pktgen's 9.
func JobFor(j engine.Job, kind string, mtu int) (*Job, error) {
	pj := &Job{
		Device: j.Interface, Threads: j.Threads, CPUs: j.CPUs, Count: j.Count, Duration: j.Duration,
		RatePPS: j.RatePPS, RateMbps: j.RateMbps,
		DstIP: j.DstIP, DstIPMax: j.DstIPMax, SrcIP: j.SrcIP, SrcIPMax: j.SrcIPMax, DstMAC: j.DstMAC, SrcMAC: j.SrcMAC,
		UDPSrcMin: j.UDPSrc.Min, UDPSrcMax: j.UDPSrc.Max, UDPDstMin: j.UDPDst.Min, UDPDstMax: j.UDPDst.Max,
		Flows: j.Flows, FlowLen: j.FlowLen, DeviceKind: kind, DeviceMTU: mtu,
	}
	if len(j.CPUs) > 0 {
		pj.Threads = 0 // one kpktgend thread per CPU listed
	}
	switch {
	case len(j.Mix) > 0:
		for _, p := range j.Mix {
			pj.IMIX = append(pj.IMIX, IMIXWeight{Frame: p.Size, Weight: p.Weight})
		}
	case j.FrameMax > j.Frame:
		pj.FrameMin, pj.FrameMax = j.Frame, j.FrameMax
	default:
		pj.Frame = j.Frame
	}
	for flag, on := range map[string]bool{"TXSIZE_RND": j.Random.Size, "IPSRC_RND": j.Random.SrcIP, "IPDST_RND": j.Random.DstIP,
		"UDPSRC_RND": j.Random.SrcPort, "UDPDST_RND": j.Random.DstPort} {
		if on {
			pj.Flags = append(pj.Flags, flag)
		}
	}
	sort.Strings(pj.Flags)
	for k, v := range j.Options {
		var err error
		switch k {
		case "clone_skb":
			pj.CloneSKB, err = strconv.Atoi(v)
		case "burst":
			pj.Burst, err = strconv.Atoi(v)
		case "frags":
			pj.Frags, err = strconv.Atoi(v)
		case "xmit_mode":
			pj.XmitMode = v
		case "flags":
			pj.Flags = append(pj.Flags, strings.Split(v, ",")...)
		default:
			return nil, fmt.Errorf("option %q is not one kernel pktgen takes here (%s)", k, strings.Join(kernelOptions, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("option %s=%q: want a number", k, v)
		}
	}
	return pj, nil
}

// Run implements engine.Engine: it runs the job with pktgen in the job's
// sender namespace.
func (e Engine) Run(ctx context.Context, j engine.Job) (*engine.Result, error) {
	n := j.Sender
	kind, mtu, err := deviceInfo(n, j.Interface)
	if err != nil {
		return nil, err
	}
	c, err := NewController(n)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	pj, err := JobFor(j, kind, mtu)
	if err != nil {
		return nil, err
	}
	res, err := c.Run(ctx, pj)
	if res == nil {
		return nil, err
	}
	return Summarize(res, j.Frame, Name), err
}

// deviceInfo reads the kind and MTU of the sender interface through netlink.
func deviceInfo(n *ns.NS, name string) (string, int, error) {
	h, err := n.NetlinkHandle()
	if err != nil {
		return "", 0, err
	}
	defer h.Close()
	l, err := nlsafe.LinkByName(h, name)
	if err != nil {
		return "", 0, fmt.Errorf("sender interface %s in %s: %w", name, n.Name, err)
	}
	kind := l.Type()
	if kind == "device" {
		kind = "" // no rtnetlink kind: a physical NIC
	}
	if _, ok := l.(*netlink.Veth); ok {
		kind = "veth"
	}
	return kind, l.Attrs().MTU, nil
}

// Summarize turns a pktgen run into an engine result: sums over threads,
// the longest elapsed time, and pps and Mbps as pktgen computes them.
func Summarize(res *RunResult, frame int, engineName string) *engine.Result {
	out := &engine.Result{Engine: engineName, Frame: frame, Stopped: res.Stopped}
	for _, d := range res.Devices {
		r := d.Result
		sent, elapsed := d.Sent, time.Duration(d.StoppedUS-d.StartedUS)*time.Microsecond
		if r.OK {
			sent, elapsed = r.Sent, r.Elapsed
		}
		// kpktgend_N is bound to CPU N.
		t := engine.ThreadResult{Name: d.Name, CPU: d.Thread, Sent: sent, Errors: d.Errors, Elapsed: elapsed, PPS: float64(r.PPS), Mbps: float64(r.BPS) / 1e6}
		out.Threads = append(out.Threads, t)
		out.Sent += t.Sent
		out.Errors += t.Errors
		out.Elapsed = max(out.Elapsed, t.Elapsed)
		out.PPS += t.PPS
		out.Mbps += t.Mbps
	}
	return out
}
