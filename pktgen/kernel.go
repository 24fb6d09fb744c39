package pktgen

import (
	"context"
	"fmt"
	"time"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// KernelEngine runs engine jobs with the kernel's pktgen.
type KernelEngine struct{}

// Name implements engine.Engine.
func (KernelEngine) Name() string { return "kernel pktgen" }

// JobFor turns an engine job into a pktgen job for a device of the given
// kind and MTU. The packets carry pktgen's timestamp header (so receivers
// can check sequence numbers); UDP ports default to pktgen's 9.
func JobFor(j engine.Job, kind string, mtu int) *Job {
	return &Job{
		Device: j.Interface, Threads: j.Threads, Count: j.Count, Duration: j.Duration,
		Frame: j.Frame, RatePPS: j.RatePPS, RateMbps: j.RateMbps,
		DstIP: j.DstIP, SrcIP: j.SrcIP, DstMAC: j.DstMAC, SrcMAC: j.SrcMAC,
		UDPSrcMin: j.UDPSrc.Min, UDPSrcMax: j.UDPSrc.Max, UDPDstMin: j.UDPDst.Min, UDPDstMax: j.UDPDst.Max,
		Flows: j.Flows, FlowLen: j.FlowLen, DeviceKind: kind, DeviceMTU: mtu,
	}
}

// Run implements engine.Engine: it runs the job with pktgen in the job's
// namespace.
func (e KernelEngine) Run(ctx context.Context, j engine.Job) (*engine.Result, error) {
	dir := j.NetnsDir
	if dir == "" {
		dir = ns.DefaultDir
	}
	n, err := ns.Open(dir, j.Namespace)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	kind, mtu, err := deviceInfo(n, j.Interface)
	if err != nil {
		return nil, err
	}
	c, err := NewController(n)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res, err := c.Run(ctx, JobFor(j, kind, mtu))
	if res == nil {
		return nil, err
	}
	return Summarize(res, j.Frame, e.Name()), err
}

// deviceInfo reads the kind and MTU of the sender interface through netlink.
func deviceInfo(n *ns.NS, name string) (string, int, error) {
	h, err := n.NetlinkHandle()
	if err != nil {
		return "", 0, err
	}
	defer h.Close()
	l, err := h.LinkByName(name)
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
		t := engine.ThreadResult{Name: d.Name, Sent: sent, Errors: d.Errors, Elapsed: elapsed, PPS: float64(r.PPS), Mbps: float64(r.BPS) / 1e6}
		out.Threads = append(out.Threads, t)
		out.Sent += t.Sent
		out.Errors += t.Errors
		out.Elapsed = max(out.Elapsed, t.Elapsed)
		out.PPS += t.PPS
		out.Mbps += t.Mbps
	}
	return out
}
