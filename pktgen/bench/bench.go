// Package bench runs one measured traffic run through a deployed lab: it
// derives the path from the lab's routes, resolves the next hop's MAC,
// samples the counters of every interface on the path while an engine
// sends, and accounts for every packet sent.
package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/nslab/nslab/pktgen"
	"github.com/nslab/nslab/pktgen/auto"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/sample"
	"github.com/nslab/nslab/topology/spec"
)

// Options tune a run.
type Options struct {
	NetnsDir string        // "" for /run/netns
	Interval time.Duration // sampling interval; 0: 1 s
	Live     io.Writer     // a line per interval, like sar -n DEV; nil: quiet
	Compact  bool          // with Live: one short line per interval (not a wide terminal)
	LabHash  string        // sha256 of the lab file, recorded in the report
	Version  string        // nslab's version, recorded in the report
	// Measure replaces the interfaces derived from the path; the last
	// one is the receiver whose rx counter counts what arrived.
	Measure []spec.Endpoint
}

// Run measures traffic t of lab l with one frame size.
func Run(ctx context.Context, l *spec.Lab, t *spec.Traffic, frame int, o Options) (*Report, error) {
	if o.NetnsDir == "" {
		o.NetnsDir = ns.DefaultDir
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	// The same derivation as nslab path: the file's path, confirmed by the
	// kernel's route lookup in every namespace, MACs read from the kernel.
	tp, err := (&lab.Manager{NetnsDir: o.NetnsDir}).Trace(l, t.From, t.To)
	if err != nil {
		return nil, fmt.Errorf("traffic %s: %w", t.Name, err)
	}
	if !tp.Deployed {
		return nil, fmt.Errorf("traffic %s: lab %s is not deployed", t.Name, l.Name)
	}
	if tp.Local {
		return nil, fmt.Errorf("traffic %s: %s is an address of the sender %s itself", t.Name, t.To, t.From.Node)
	}
	path, mac := tp.Path, tp.MACs[0]
	eng, err := pick(t.Engine)
	if err != nil {
		return nil, err
	}
	job := jobFor(l, t, frame, mac, o.NetnsDir)
	rx := path.Hops[len(path.Hops)-1]
	sink, err := openSink(o.NetnsDir, l.Namespace(rx.Node), t)
	if err != nil {
		return nil, err
	}
	defer sink.Close()
	targets, roles, err := measured(l, path, o.Measure)
	if err != nil {
		return nil, err
	}
	s, err := sample.New(o.NetnsDir, targets)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := prime(ctx, eng, job, s); err != nil {
		return nil, err
	}

	rep := &Report{Lab: l.Name, Traffic: t.Name, From: t.From.String(), To: t.To.String(), Frame: frame,
		Path: path.Hops, NextHop: path.NextHop.String(), NextHopMAC: mac.String(), Targets: targets, roles: roles}
	routers := routerNodes(path)
	// The baselines are read before the engine starts, so nothing it sends
	// is missed.
	before, err := snapshot(o.NetnsDir, l, routers)
	if err != nil {
		return nil, err
	}
	base, err := s.Read()
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(context.Background())
	samplesc := make(chan []sample.Sample, 1)
	var live func(sample.Sample)
	if o.Live != nil {
		live = liveLines(o.Live, targets, o.Compact)
	}
	go func() {
		all, _ := s.Run(sctx, o.Interval, live)
		samplesc <- all
	}()
	res, runErr := eng.Run(ctx, job)
	settle(s)
	after, err := snapshot(o.NetnsDir, l, routers)
	stop()
	if err != nil {
		return nil, err
	}
	rep.hostCounters(before, after, routers)
	rep.Env = environment()
	rep.Env.LabHash, rep.Env.NSLab = o.LabHash, o.Version
	if res != nil {
		rep.Env.Engine, rep.Env.EngineV = res.Engine, engineVersion(o.NetnsDir, job.Namespace, res.Engine, o.Version)
	}
	rep.Samples = <-samplesc
	final, err := s.Read()
	if err != nil {
		return nil, err
	}
	rep.Samples = append(rep.Samples, final)
	if res == nil {
		return nil, runErr
	}
	rep.fill(res, base, final)
	return rep, runErr
}

// engineVersion is pktgen's version for the kernel engine, nslab's for the
// userspace one.
func engineVersion(dir, nsName, engineName, nslab string) string {
	if engineName != (pktgen.KernelEngine{}).Name() {
		return "nslab " + nslab
	}
	n, err := ns.Open(dir, nsName)
	if err != nil {
		return ""
	}
	defer n.Close()
	return "pktgen " + pktgen.Version(n)
}

// measured returns the interfaces to sample and their roles: the path's,
// or the ones given with --measure (the last is the receiver).
func measured(l *spec.Lab, path *spec.Path, measure []spec.Endpoint) ([]sample.Target, []string, error) {
	if len(measure) == 0 {
		return targets(l, path), roles(path.Hops), nil
	}
	var ts []sample.Target
	var rs []string
	for i, e := range measure {
		if l.Node(e.Node) == nil {
			return nil, nil, fmt.Errorf("--measure %s: no node %s in the lab", e, e.Node)
		}
		ts = append(ts, sample.Target{Node: e.Node, Namespace: l.Namespace(e.Node), Interface: e.Interface})
		rs = append(rs, map[bool]string{true: "receiver", false: "measured"}[i == len(measure)-1])
	}
	return ts, rs, nil
}

// hostState is what a run reads besides interface counters: CPU times,
// softnet, and each router's IP counters.
type hostState struct {
	cpu               map[string][]uint64
	dropped, squeezed uint64
	mib               map[string]map[string]uint64
}

func snapshot(dir string, l *spec.Lab, routers []string) (hostState, error) {
	h := hostState{cpu: cpuTimes()}
	h.dropped, h.squeezed = softnet()
	var err error
	h.mib, err = readMIBs(dir, l, routers)
	return h, err
}

// hostCounters puts the change between two snapshots into the report.
func (r *Report) hostCounters(before, after hostState, routers []string) {
	r.CPU = cpuUse(before.cpu, after.cpu)
	r.Softnet = Softnet{Dropped: after.dropped - before.dropped, TimeSqueeze: after.squeezed - before.squeezed}
	for _, n := range routers {
		rd := RouterDrops{Node: n, Forwarded: after.mib[n]["ForwDatagrams"] - before.mib[n]["ForwDatagrams"], Discards: map[string]uint64{}}
		for _, k := range ipDiscards {
			if d := after.mib[n][k] - before.mib[n][k]; d > 0 {
				rd.Discards[k] = d
			}
		}
		r.Routers = append(r.Routers, rd)
	}
}

// routerNodes lists the nodes that route on the path (not switches).
func routerNodes(p *spec.Path) []string {
	var out []string
	for i, h := range p.Hops {
		if i > 0 && i < len(p.Hops)-1 && !h.L2 {
			out = append(out, h.Node)
		}
	}
	return out
}

func readMIBs(dir string, l *spec.Lab, nodes []string) (map[string]map[string]uint64, error) {
	out := map[string]map[string]uint64{}
	for _, n := range nodes {
		m, err := ipMIB(dir, l.Namespace(n))
		if err != nil {
			return nil, err
		}
		out[n] = m
	}
	return out, nil
}

// pick returns the engine a traffic run asks for.
func pick(name string) (engine.Engine, error) {
	switch name {
	case "", "auto":
		return auto.Engine{}, nil
	case "pktgen":
		return pktgen.KernelEngine{}, nil
	case "userspace":
		return userspace.Engine{}, nil
	}
	return nil, fmt.Errorf("engine %q: use auto, pktgen or userspace", name)
}

func jobFor(l *spec.Lab, t *spec.Traffic, frame int, mac net.HardwareAddr, dir string) engine.Job {
	return engine.Job{
		NetnsDir: dir, Namespace: l.Namespace(t.From.Node), Interface: t.From.Interface,
		Count: t.Count, Duration: t.Duration, Frame: frame, RatePPS: t.RatePPS, RateMbps: t.RateMbps, Threads: t.Threads,
		DstIP: t.To, DstMAC: mac,
		UDPSrc: engine.PortRange{Min: t.SrcPorts[0], Max: t.SrcPorts[1]}, UDPDst: engine.PortRange{Min: t.DstPorts[0], Max: t.DstPorts[1]},
		Flows: t.Flows, FlowLen: t.FlowLen, Options: t.Options,
	}
}

// targets lists the interfaces to sample: the sender's, each hop's ingress
// and egress, the receiver's.
func targets(l *spec.Lab, p *spec.Path) []sample.Target {
	var out []sample.Target
	for _, h := range p.Hops {
		for _, i := range []string{h.In, h.Out} {
			if i != "" {
				out = append(out, sample.Target{Node: h.Node, Namespace: l.Namespace(h.Node), Interface: i})
			}
		}
	}
	return out
}

// openSink binds the run's UDP destination port in the receiver's
// namespace and never reads it: the receiver then answers nothing (no ICMP
// port unreachable, which would also make it re-probe ARP later, one more
// packet at its interface). With a port range only the first port is held.
func openSink(dir, nsName string, t *spec.Traffic) (io.Closer, error) {
	port := t.DstPorts[0]
	if port == 0 {
		port = 9
	}
	n, err := ns.Open(dir, nsName)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	network := "udp4"
	if t.To.Is6() {
		network = "udp6"
	}
	var c net.PacketConn
	err = n.Do(func() error {
		var err error
		c, err = net.ListenPacket(network, fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("receiver sink on UDP port %d in %s: %w", port, nsName, err)
	}
	return c, nil
}

// prime sends one packet along the path, so that every router has resolved
// its next hop's MAC (ARP) before anything is counted, and waits for the
// counters to settle.
func prime(ctx context.Context, e engine.Engine, job engine.Job, s *sample.Sampler) error {
	job.Count, job.Duration, job.Threads, job.RatePPS, job.RateMbps = 1, 0, 1, 0, 0
	if _, err := e.Run(ctx, job); err != nil {
		return fmt.Errorf("priming packet: %w", err)
	}
	settle(s)
	return nil
}

// settle waits until the counters stop moving (packets still queued on
// the path when the engine returns), at most one second.
func settle(s *sample.Sampler) {
	last, err := s.Read()
	for i := 0; i < 50 && err == nil; i++ {
		time.Sleep(20 * time.Millisecond)
		now, err2 := s.Read()
		if err2 != nil || same(now, last) {
			return
		}
		last = now
	}
}

func same(a, b sample.Sample) bool {
	for i := range a.Counters {
		if a.Counters[i] != b.Counters[i] {
			return false
		}
	}
	return true
}

// liveLines prints, per interval, what sar -n DEV would: time, interface,
// rx and tx pps, rx Mbps, drops; compact: one line with the sender's tx,
// the receiver's rx and all drops.
func liveLines(w io.Writer, targets []sample.Target, compact bool) func(sample.Sample) {
	var prev *sample.Sample
	return func(s sample.Sample) {
		if prev != nil && compact {
			rates := sample.Rates(*prev, s)
			var drops uint64
			for _, r := range rates {
				drops += r.Drops
			}
			fmt.Fprintf(w, "%6.1fs  tx %.0f pps  rx %.0f pps  drops %d\n", s.At.Seconds(), rates[0].TxPPS, rates[len(rates)-1].RxPPS, drops)
		} else if prev != nil {
			for i, r := range sample.Rates(*prev, s) {
				fmt.Fprintf(w, "%7.2fs  %-22s rx %10.0f pps  tx %10.0f pps  rx %8.1f Mb/s  drops %d\n",
					s.At.Seconds(), targets[i], r.RxPPS, r.TxPPS, r.RxMbps, r.Drops)
			}
		}
		cp := s
		prev = &cp
	}
}
