// Package bench measures traffic runs through a running lab: it takes the
// path and the next hop's MAC from the lab's routes (confirmed by the
// kernel), samples the counters of every interface on the path while an
// engine sends, accounts for every packet the sender took, and says what
// limited the run. Sweeps, throughput searches and the deploy-or-reuse
// policy of nslab bench (Sweep) live here too.
package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/nslab/nslab/internal/caps"
	"github.com/nslab/nslab/topology/lab/deployed"

	"github.com/nslab/nslab/pktgen/auto"
	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/bench/events"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"github.com/nslab/nslab/pktgen/bench/tcp"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/kernel"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/stall"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// Options tune a bench.
type Options struct {
	Interval time.Duration // sampling interval; 0: 1 s
	Live     io.Writer     // a line per interval, like sar -n DEV; nil: quiet
	// Stream gets an interval line of the live stream per sampling
	// interval of every run, searches' trials included (see
	// report.LiveEvent), on the sampler's goroutine; nil: none.
	Stream  func(report.LiveEvent)
	Compact bool // with Live: one short line per interval (not a wide terminal)
	// Status gets a line saying what each measured run found, as it
	// ends (a terminal's status line during a long run); nil: none.
	Status  func(string)
	Version string // nslab's version, recorded in the report
	// AsDeployed: the lab is the one deployed under the name of the file
	// given, taken as deployed from another file (nslab bench
	// --as-deployed); the report names that file.
	AsDeployed bool
	// Measure replaces the interfaces derived from the path; the last
	// one is the receiver whose rx counter counts what arrived.
	Measure []spec.Endpoint
	// Remote reaches the path's hops on other hosts of a lab that spans
	// hosts (an agent's bench, through its coordinator): they are read as
	// this host's are, and the run's receiver may be on another host.
	// Nil: those hops are one place of the accounting, and the sender and
	// the receiver must be on this host.
	Remote remote.Transport
	// Chooser chooses the engine; its zero value probes for real.
	Chooser auto.Chooser
	// Caps are what this process may do here (cmd finds them once);
	// nil: caps.Detect.
	Caps *caps.Capabilities
	// Latency reads the run's packets at the receiver: one-way latency
	// and, reading every packet, the accounting by sequence number
	// (latency.go). LatencyEvery reads one packet in that many (a power
	// of two; 1: every packet); 0 chooses (see readEvery).
	Latency      bool
	LatencyEvery uint32
	// Variant names the lab variant applied (see Report.Variant), and
	// Block the block of trials (see Report.Block).
	Variant, Block string
	// Events are changes made while the traffic runs (package events);
	// the report's Failover says what they did.
	Events []events.Event
	// Gate, when set, is called just before the engine starts, and holds
	// it until the other engines measured with it are ready (a duet).
	Gate func()
	// Duet says the run shares its CPUs with a twin lab's run measured at
	// the same time: the CPUs' softirq time holds both.
	Duet bool
}

// Bench measures one traffic run of a running lab, at any frame size and
// rate. Everything that does not change between runs is done once: the
// engine is chosen, the path traced, the receiver's sink bound, the
// sampler and the neighbour frame counters opened, the machine read.
// Close releases them; the running lab stays open (the caller's).
type Bench struct {
	run     *lab.Running
	t       *spec.Traffic
	opts    Options
	eng     engine.Engine
	reason  string
	path    *deployed.TracedPath
	meas    *measurement
	sink    io.Closer
	env     report.Env
	place   account.Placement
	allowed spec.CPUSet // the CPUs this process may use
	// senderQdisc is the sender interface's own root qdisc (nil: none).
	senderQdisc *qdisc.State
	// receiver samples the receiver alone, on a path with impairments or
	// through another host (see watchReceiver); nil otherwise.
	receiver *sample.Sampler
	// watch is the stall watch of the run's CPUs (nil: none, and
	// watchNote says why).
	watch     *stall.Watcher
	watchCPUs []int
	watchNote string
	// cost counts softirq time for the routers' cost per packet.
	cost costing
}

// New prepares a bench of traffic t on running lab r.
func New(r *lab.Running, t *spec.Traffic, o Options) (*Bench, error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	b := &Bench{run: r, t: t, opts: o}
	if err := b.prepare(); err != nil {
		b.Close()
		return nil, fmt.Errorf("traffic %s: %w", t.Name, err)
	}
	return b, nil
}

// prepare does New's work, step by step.
func (b *Bench) prepare() error {
	var err error
	// The same derivation as nslab path: the path by the kernels'
	// addresses and routes, confirmed by the kernel's route lookup in
	// every namespace, MACs from the kernel.
	if err := b.run.Learn(); err != nil {
		return err
	}
	if b.opts.Remote != nil && b.run.Lab.Spans() {
		if err := remote.LearnRoutes(b.opts.Remote, b.run.Lab); err != nil {
			return err
		}
	}
	if b.path, err = b.run.TraceFlow(b.t.From, b.t.To, b.t.Flow()); err != nil {
		return err
	}
	if b.path.Local {
		return fmt.Errorf("%s is an address of the sender %s itself", b.t.To, b.t.From.Node)
	}
	receiver := b.path.Hops[len(b.path.Hops)-1].Node
	if err := b.checkEnds(receiver); err != nil {
		return err
	}
	if err := b.prepareEngine(receiver); err != nil {
		return err
	}
	if b.meas, err = newMeasurement(b.run, b.path.Path, b.opts.Measure, b.t, b.opts.Remote); err != nil {
		return err
	}
	if b.env, b.allowed, err = environment(); err != nil {
		return err
	}
	b.place = account.PlacementOf(b.run.Lab, b.path.Path, b.t, b.allowed)
	b.env.Placement, b.env.Sampler = placementLines(b.run.Lab, b.t), b.place.Note
	// A queue on the path keeps delivering after the sender stops: one of
	// this host's impairments, or any on another host's hops, which this
	// host cannot see.
	if len(b.meas.qdiscs) > 0 || b.path.Elsewhere != "" {
		if b.receiver, err = b.meas.samplerOf(b.run, b.meas.targets[len(b.meas.targets)-1:]); err != nil {
			return err
		}
	}
	for t, q := range b.meas.qdiscs {
		if b.env.Impairments == nil {
			b.env.Impairments = map[string]string{}
		}
		b.env.Impairments[t] = q.String()
		if q.Impair != nil {
			st := *q
			st.Impair = account.WithBurst(q.Impair, b.fileImpair(t))
			b.env.Impairments[t] = st.String()
		}
	}
	b.env.Engine = tcp.Engine
	if b.eng != nil {
		b.env.Engine, b.env.EngineV = b.eng.Name(), engineVersion(b)
	}
	b.env.LabHash, b.env.NSLab = b.run.Lab.SHA256, b.opts.Version
	b.env.LabFile, b.env.AsDeployed = b.run.Lab.File, b.opts.AsDeployed
	for _, s := range b.run.Lab.Machine {
		b.env.LabSets = append(b.env.LabSets, s.Key+"="+s.Value)
	}
	b.openCosting()
	b.startWatch() // last: nothing after it can fail and leave it running
	return nil
}

// otherHosts are the hosts of the lab but this one (none on one machine).
func (b *Bench) otherHosts() []string {
	var out []string
	for _, h := range b.run.Lab.Model().Hosts {
		if h.Name != b.run.Lab.OnHost() {
			out = append(out, h.Name)
		}
	}
	return out
}

// detour is the interfaces off the path that carried the run, in a run
// with events: this host's, and the other hosts' when they are reached.
func (b *Bench) detour(off *events.OffPath) ([]report.HopDelta, error) {
	var elsewhere map[string]remote.Counted
	if b.opts.Remote != nil {
		var err error
		if elsewhere, err = remote.OffPath(b.opts.Remote, b.otherHosts()); err != nil {
			return nil, fmt.Errorf("read the other hosts' interfaces off the path: %w", err)
		}
	}
	return off.Detour(b.run, b.path.Hops, elsewhere), nil
}

// checkEnds refuses a run whose sender is on another host, or whose
// receiver is when other hosts are not reached from here.
func (b *Bench) checkEnds(receiver string) error {
	ends := []string{b.t.From.Node, receiver}
	if b.opts.Remote != nil {
		ends = ends[:1] // the receiver's hops are read on its host, a TCP run's sink opened there
	}
	for _, end := range ends {
		if l := b.run.Lab; !l.Local(end) {
			return fmt.Errorf("%s is on host %s: bench counts what the sender sends and the receiver receives on the host it runs on; run it there, or choose a run whose sender and receiver are both on host %s (the path between may cross other hosts)",
				end, l.Model().Node(end).Host, l.OnHost())
		}
	}
	return nil
}

// prepareEngine chooses the engine of a UDP run, reads the sender
// interface's own qdisc and binds the receiver's sink; a TCP run brings
// its own sender and sink (tcp.go).
func (b *Bench) prepareEngine(receiver string) error {
	if b.t.TCP != nil {
		return nil
	}
	var err error
	if b.eng, b.reason, err = b.opts.Chooser.Choose(b.t.Engine, b.run.Node(b.t.From.Node).NS); err != nil {
		return err
	}
	if b.senderQdisc, err = b.run.Impairment(b.t.From); err != nil {
		return err
	}
	if !b.run.Lab.Local(receiver) {
		return nil // its host holds the sink (see newMeasurement)
	}
	b.sink, err = remote.OpenSink(b.run.Node(receiver).NS, b.t.Flow().Port, b.t.To.Is6())
	return err
}

// Close releases what New opened.
func (b *Bench) Close() {
	if b.sink != nil {
		_ = b.sink.Close() // a socket only held open, never read
	}
	if b.meas != nil {
		b.meas.close()
	}
	if b.watch != nil {
		_, _, _ = b.watch.Stop() // what each run needed it has taken
		b.watch = nil
	}
	b.cost.close()
}

// Engine names the engine the bench chose, and why.
func (b *Bench) Engine() (name, reason string) {
	if b.eng == nil {
		return tcp.Engine, ""
	}
	return b.eng.Name(), b.reason
}

// Run measures traffic t at one frame size, with the rate and length
// the traffic run gives.
func (b *Bench) Run(ctx context.Context, frame int) (*report.Report, error) {
	if b.t.TCP != nil {
		rep, err := b.measureTCP(ctx)
		b.status(rep)
		return rep, err
	}
	return b.measure(ctx, b.t, frame)
}

// measure is one measured run of t (the bench's traffic, or a trial's
// variant of it).
func (b *Bench) measure(ctx context.Context, t *spec.Traffic, frame int) (*report.Report, error) {
	rep, err := b.measureUDP(ctx, t, frame)
	b.status(rep)
	return rep, err
}

// status says on the status line what a measured run found.
func (b *Bench) status(r *report.Report) {
	if b.opts.Status == nil || r == nil {
		return
	}
	what := r.Traffic
	if r.Variant != "" {
		what += ", variant " + r.Variant
	}
	if r.Frame > 0 {
		what += fmt.Sprintf(", %d-byte frames", r.Frame)
	}
	lost := 0.0
	if r.Sent > 0 {
		lost = 100 * (float64(r.Sent) - float64(r.Received)) / float64(r.Sent)
	}
	b.opts.Status(fmt.Sprintf("last run: %s: %.0f pps received, %.2f%% of the sent lost", what, r.PPS, lost))
}

// measureUDP is measure of a UDP run.
func (b *Bench) measureUDP(ctx context.Context, t *spec.Traffic, frame int) (*report.Report, error) {
	defer confine(b.place, b.allowed)()
	job := b.job(t, frame)
	if err := b.prime(ctx, job); err != nil {
		return nil, err
	}
	st, err := b.start(t, frame)
	if err != nil {
		return nil, err
	}
	if b.opts.Gate != nil {
		b.opts.Gate()
	}
	if len(b.opts.Events) == 0 {
		res, runErr := st.run(ctx, b.eng, job)
		return b.finish(t, frame, st, res, runErr)
	}
	if st.offPath, err = events.OpenOffPath(b.run, t.To.Is6()); err != nil {
		return nil, err
	}
	defer st.offPath.Close()
	var elsewhere events.Elsewhere
	if b.opts.Remote != nil {
		if err := remote.OpenOffPath(b.opts.Remote, b.otherHosts(), t.To.Is6()); err != nil {
			return nil, fmt.Errorf("count the other hosts' interfaces off the path: %w", err)
		}
		elsewhere = func(host string, e events.Event) error { return remote.Event(b.opts.Remote, host, e.String()) }
	}
	stop := events.Schedule(ctx, b.run, b.opts.Events, elsewhere)
	res, runErr := st.run(ctx, b.eng, job)
	done := stop()
	rep, err := b.finish(t, frame, st, res, runErr)
	if rep != nil {
		rep.Failover = b.failover(t, rep, done)
	}
	return rep, err
}

// running is a measured run in progress: what was read before its engine
// started, the samplers going, and when the engine ran.
type running struct {
	before     hostState
	base       sample.Sample
	stop       func() []sample.Sample
	stopWatch  func() time.Duration
	start, end time.Time
	reader     arrivalsReader // with Options.Latency
	every      uint32         // the reader's sampling
	// offPath counts every lab interface, in a run with events (nil
	// otherwise): the traffic may go round the path.
	offPath *events.OffPath
	samples []sample.Sample // what the sampler took, once stopped (a TCP run's)
}

// start reads the counters and the host state at the start of a run of t
// (the path primed), opens the receiver's reader (with Options.Latency)
// and starts the samplers.
func (b *Bench) start(t *spec.Traffic, frame int) (*running, error) {
	st := &running{stopWatch: func() time.Duration { return 0 }}
	var err error
	if st.before, err = snapshot(b.meas.routers, &b.cost); err != nil {
		return nil, err
	}
	if st.base, err = b.meas.baseline(); err != nil {
		return nil, err
	}
	if b.opts.Latency { // last of what can fail: nothing to stop when it does
		st.every = b.readEvery(t, frame)
		if st.reader, err = b.openReader(t, st.every); err != nil {
			return nil, err
		}
	}
	st.stop = b.sampleInBackground(t, frame)
	if b.receiver != nil {
		st.stopWatch = watchReceiver(b.receiver)
	}
	return st, nil
}

// run runs the engine's job, noting when it started and ended.
func (st *running) run(ctx context.Context, eng engine.Engine, job engine.Job) (*engine.Result, error) {
	st.start = time.Now()
	res, err := eng.Run(ctx, job)
	st.end = time.Now()
	return res, err
}

// finish waits for the path to settle, reads the counters and the host
// state at the end of a run, and makes its report.
func (b *Bench) finish(t *spec.Traffic, frame int, st *running, res *engine.Result, runErr error) (*report.Report, error) {
	settle(b.meas.sampler, b.remote())
	window := st.stopWatch()
	after, err := snapshot(b.meas.routers, &b.cost)
	all := st.stop()
	if err != nil {
		return nil, err
	}
	if res == nil {
		if st.reader != nil {
			_, _ = st.reader.stop(0, remote.ArrivalsAsk{}) // the run failed: its error is the one to report
		}
		return nil, runErr
	}
	final, neighbours, err := b.meas.final()
	if err != nil {
		return nil, err
	}
	rd := reading{base: st.base, final: final, neighbours: neighbours, samples: append(all, final), before: st.before, after: after, window: window}
	if st.offPath != nil {
		rd.offPath, err = b.detour(st.offPath)
		if err != nil {
			return nil, err
		}
	}
	b.meas.withRemoteRouters(&rd.before, &rd.after)
	rep := b.report(t, frame, res, rd)
	rep.Started, rep.Ended = st.start, st.end
	b.stallsOf(rep)
	if st.reader != nil {
		if err := b.readerResult(st.reader, st.every, res, rep); err != nil {
			return nil, err
		}
	}
	account.Fidelity(rep, b.meas.qdiscs, frameBytes(rep), b.fileImpair)
	return rep, runErr
}

// job is the engine job of traffic t at one frame size. Both engines skip
// the sender interface's qdisc by default (as pktgen does); when that
// interface is impaired, the job goes through it, or the impairment would
// not act on the run.
func (b *Bench) job(t *spec.Traffic, frame int) engine.Job {
	j := jobFor(t, frame, b.run.Node(t.From.Node).NS, b.path.SenderMAC())
	if !hasFamily(b.run.Lab.Model().Node(t.From.Node).Interface(t.From.Interface), t.To) {
		// An interface without an address of the run's family (an IPv4
		// route through an IPv6 link-local next hop): the source is the
		// kernel's choice, as for the node's own packets.
		j.SrcIP = b.path.Source
	}
	if b.senderQdisc != nil {
		key, value := "qdisc", "through"
		if _, ok := b.eng.(kernel.Engine); ok {
			key, value = "xmit_mode", "queue_xmit"
		}
		if _, set := j.Options[key]; !set {
			j.Options = withOption(j.Options, key, value)
		}
	}
	return j
}

// withOption is a copy of opts with key set to value.
func withOption(opts map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range opts {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// hasFamily reports whether interface i has an address of dst's family
// other than a link-local one (the kernel's, once read).
func hasFamily(i *spec.Interface, dst netip.Addr) bool {
	if i == nil {
		return false
	}
	for _, p := range i.Addrs() {
		if p.Addr().Is4() == dst.Is4() && !p.Addr().IsLinkLocalUnicast() {
			return true
		}
	}
	return false
}

// jobFor turns a traffic run into an engine job.
func jobFor(t *spec.Traffic, frame int, sender *ns.NS, mac net.HardwareAddr) engine.Job {
	return engine.Job{
		Sender: sender, Interface: t.From.Interface,
		Count: t.Count, Duration: t.Duration, Frame: frame, RatePPS: t.RatePPS, RateMbps: t.RateMbps, Threads: t.Threads, CPUs: t.CPUs,
		DstIP: t.To, DstMAC: mac,
		UDPSrc: engine.PortRange{Min: t.SrcPorts[0], Max: t.SrcPorts[1]}, UDPDst: engine.PortRange{Min: t.DstPorts[0], Max: t.DstPorts[1]},
		Flows: t.Flows, FlowLen: t.FlowLen, Options: t.Options, Mix: mixOf(t.Mix),
	}
}

// mixOf is a run's frame mix as engines take it.
func mixOf(m spec.Mix) []engine.MixPart {
	var out []engine.MixPart
	for _, p := range m {
		out = append(out, engine.MixPart{Size: p.Size, Weight: p.Weight})
	}
	return out
}

// sampleInBackground samples a run of t at the bench's interval, on the
// sampler's CPU, until the returned stop is called, and hands each sample
// to the live lines and the live stream; stop returns the samples.
func (b *Bench) sampleInBackground(t *spec.Traffic, frame int) func() []sample.Sample {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan []sample.Sample, 1)
	var live func(sample.Sample)
	if b.opts.Live != nil {
		live = liveLines(b.opts.Live, b.meas.targets, b.meas.roles, b.opts.Compact)
	}
	live = both(live, b.liveStream(t, frame))
	go onCPU(b.place.Sampler, func() {
		all, _ := b.meas.sampler.Run(ctx, b.opts.Interval, live)
		out <- all
	})
	return func() []sample.Sample { cancel(); return <-out }
}

// reading is what a run read: counters before and after, neighbour frames,
// the samples in between, and the host state.
type reading struct {
	base, final   sample.Sample
	neighbours    []control
	samples       []sample.Sample
	before, after hostState
	window        time.Duration     // the receiver's receive window on an impaired path; 0 otherwise
	offPath       []report.HopDelta // in a run with events: the counters of interfaces off the path
}

// report puts a run's readings together.
func (b *Bench) report(t *spec.Traffic, frame int, res *engine.Result, rd reading) *report.Report {
	p := b.path
	rep := &report.Report{Lab: b.run.Lab.Name, Traffic: t.Name, Variant: b.opts.Variant, Block: b.opts.Block, From: t.From.String(), To: t.To.String(), Frame: frame,
		Engine: res.Engine, Reason: b.reason, OfferedPPS: offeredPPS(t, frame), Elapsed: res.Elapsed, ReceiveWindow: rd.window, Result: res,
		Path: p.Hops, NextHop: p.NextHop.String(), NextHopMAC: p.SenderMAC().String(), Differences: differenceWords(b.path.Differences), Targets: b.meas.targets, HopRoles: b.meas.roles,
		Samples: rd.samples, Shapers: b.meas.shaperRates(), Env: b.env}
	if t.Mix != nil {
		rep.Mix, rep.MeanFrame = t.Mix.String(), t.Mix.Mean()
	}
	rep.Hops = hopCounters(b.meas, rd.base, rd.final, rd.neighbours)
	if rd.offPath != nil {
		rep.Failover = &report.Failover{Detour: rd.offPath}
		events.RoundThePath(rep.Hops, rd.offPath)
	}
	account.Balance(rep, res, frame)
	rep.LostHosts = b.meas.lostHosts()
	if b.meas.hops != nil {
		rep.HostClocks = b.meas.hops.Clocks()
	}
	rep.Rates()
	rep.CPU = report.CPUUses(rd.before.cpu, rd.after.cpu)
	b.place.Label(rep.CPU)
	rep.Softnet = report.SoftnetUses(rd.before.softnet, rd.after.softnet)
	rep.OtherHosts = b.otherHostsCPUs()
	account.RouterCounts(rep, rd.before.routers(), rd.after.routers(), t.To.Is6())
	b.routerCost(rep, rd.before, rd.after)
	account.ExplainDrops(rep, frame, b.meas.mtu, b.meas.qdiscs, b.place)
	sentPPS := 0.0
	if res.Elapsed > 0 {
		sentPPS = float64(rep.Sent) / res.Elapsed.Seconds()
	}
	account.Judge(rep, b.place, sentPPS)
	return rep
}

// fileImpair is the impairment the lab file gives interface target
// ("node:interface"), nil when none.
func (b *Bench) fileImpair(target string) *spec.Impair {
	ep, err := spec.ParseInterface(target)
	if err != nil {
		return nil
	}
	if n := b.run.Lab.Node(ep.Node); n != nil {
		if i := n.Interface(ep.Interface); i != nil {
			return i.Impair
		}
	}
	return nil
}

// frameBytes is the mean size of a run's frames, with FCS.
func frameBytes(r *report.Report) float64 {
	if r.MeanFrame > 0 {
		return r.MeanFrame
	}
	return float64(r.Frame)
}

// offeredPPS is the rate a traffic run asks for per thread, in pps.
func offeredPPS(t *spec.Traffic, frame int) uint64 {
	size := float64(frame)
	if t.Mix != nil {
		size = t.Mix.Mean()
	}
	if t.RateMbps > 0 && size > engine.FCS {
		return uint64(float64(t.RateMbps) * 1e6 / ((size - engine.FCS) * 8))
	}
	return t.RatePPS
}

// prime sends one packet along the path, so that every router has resolved
// its next hop's MAC (ARP) before anything is counted, and waits for the
// counters to settle.
func (b *Bench) prime(ctx context.Context, job engine.Job) error {
	job.Count, job.Duration, job.Threads, job.CPUs, job.RatePPS, job.RateMbps = 1, 0, 1, nil, 0, 0
	if _, err := b.eng.Run(ctx, job); err != nil {
		return fmt.Errorf("priming packet: %w", err)
	}
	settle(b.meas.sampler, b.remote())
	return nil
}

// remote reports whether the run's path crosses another host whose
// queues and counters this host cannot see (no Options.Remote).
func (b *Bench) remote() bool { return b.path.Elsewhere != "" && b.meas.hops == nil }

// settle waits until the counters stop moving (packets still on the path
// when the engine returns), at most a second; while a qdisc on the path
// holds packets (an impairment's queue or delay), or on a path through
// another host (remote: its queues cannot be seen from here), until they
// stop, giving up after a second without progress or 30 s in all.
func settle(s *sample.Sampler, remote bool) {
	const step = 20 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	var moving, still time.Duration
	last, err := s.Read()
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(step)
		now, err2 := s.Read()
		if err2 != nil {
			return
		}
		if remote || queued(now) {
			if still += step; !same(now, last) {
				still = 0
			}
			if still >= time.Second {
				return
			}
		} else if moving += step; same(now, last) || moving >= time.Second {
			return
		}
		last = now
	}
}

// queued reports whether any qdisc on the path holds packets.
func queued(s sample.Sample) bool {
	for _, c := range s.Counters {
		if c.QdiscQueued > 0 {
			return true
		}
	}
	return false
}

func same(a, b sample.Sample) bool {
	for i := range a.Counters {
		if a.Counters[i] != b.Counters[i] {
			return false
		}
	}
	return true
}

// differenceWords is where the kernels on the path differ from the file,
// as the report says it.
func differenceWords(ds []deployed.Difference) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}
