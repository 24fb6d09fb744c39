package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"github.com/nslab/nslab/pktgen/bench/tcp"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/tcpflow"
	"github.com/nslab/nslab/topology/ns"
)

// A TCP run (a traffic run with tcp:) is measured like a UDP one, the
// interfaces of the path sampled and the host read before and after, but
// its engine is TCP itself: tcpflow's connections from the sender's node
// to a sink in the receiver's. There is no balance of packets sent and
// received (TCP sends again what was lost); instead the segments the
// senders retransmitted are set against the drops the path counted.

// measureTCP is one measured run of the bench's TCP flows.
func (b *Bench) measureTCP(ctx context.Context) (*report.Report, error) {
	if len(b.opts.Events) > 0 || b.opts.Latency || b.opts.Gate != nil {
		return nil, errors.New("a TCP run (tcp:) is measured without events, latency or a duet")
	}
	defer confine(b.place, b.allowed)()
	m, err := b.idleTCP(ctx)
	if err != nil {
		return nil, err
	}
	defer m.pr.close()
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	return m.end(m.flows(ctx))
}

// tcpMeasure is a TCP run in its phases: idle (the sender's counters and
// the probe alone), begun (the samplers and the probe under load going),
// the flows, and the end (everything read, the report made). A group runs
// the phases of its TCP runs beside its UDP runs' engines.
type tcpMeasure struct {
	b                *Bench
	sender, receiver *ns.NS
	kBefore          map[string]uint64
	pr               *probe
	idle             *receive.Latency
	idleSeq          *receive.Sequence
	st               *running
	loading          *started
}

// idleTCP reads the sender's retransmission counters and measures the
// probe alone, nothing else running. The caller closes m.pr.
func (b *Bench) idleTCP(ctx context.Context) (*tcpMeasure, error) {
	m := &tcpMeasure{b: b, sender: b.run.Node(b.t.From.Node).NS}
	if n := b.run.Node(b.receiverNode()); n != nil { // nil: on another host, the sink opened there
		m.receiver = n.NS
	}
	var err error
	if m.kBefore, err = kstat.TCPCounters(m.sender); err != nil {
		return nil, err
	}
	if m.pr, err = b.newProbe(); err != nil {
		return nil, err
	}
	if m.idle, m.idleSeq, err = m.pr.idle(ctx); err != nil {
		m.pr.close()
		return nil, err
	}
	return m, nil
}

// begin reads the counters at the start and starts the samplers and the
// probe under load.
func (m *tcpMeasure) begin(ctx context.Context) error {
	var err error
	if m.st, err = m.b.start(m.b.t, 0); err != nil {
		return err
	}
	if m.loading, err = m.pr.start(ctx, m.b.t.Duration); err != nil {
		m.stop()
		return err
	}
	return nil
}

// stop stops the samplers of a run that cannot go on.
func (m *tcpMeasure) stop() {
	m.st.stop()
	m.st.stopWatch()
}

// flows runs the TCP flows (from the sender's namespace to a sink in the
// receiver's, here or on its host), noting when they started and ended.
func (m *tcpMeasure) flows(ctx context.Context) (*tcpflow.Result, error) {
	t := m.b.t
	job := tcpflow.Job{Sender: m.sender, Receiver: m.receiver, Dst: t.To, Flows: t.TCP.Flows, CC: t.TCP.CC, Duration: t.Duration, Interval: m.b.opts.Interval,
		BusyPoll: tcp.SinkBusyPoll(m.b.run.Lab.Model().Node(m.b.receiverNode()), t.To)}
	if m.receiver == nil {
		sink, err := m.b.remoteSink(job)
		if err != nil {
			return nil, err
		}
		defer sink.Close()
		job.Sink = sink
	}
	if m.b.opts.Live != nil {
		job.OnSample = tcp.LiveLine(m.b.opts.Live)
	}
	m.st.start = time.Now()
	res, err := tcpflow.Run(ctx, job)
	m.st.end = time.Now()
	return res, err
}

// receiverNode is the node at the end of the path.
func (b *Bench) receiverNode() string { return b.path.Hops[len(b.path.Hops)-1].Node }

// receiverHost is the host of the node at the end of the path ("": a lab
// on one machine).
func (b *Bench) receiverHost() string { return b.run.Lab.Model().Node(b.receiverNode()).Host }

// remoteSink opens job's sink on the receiver's host, its times taken
// less that host's clock offset (as the receiver's reader's are).
func (b *Bench) remoteSink(job tcpflow.Job) (*remote.TCPSink, error) {
	host := b.receiverHost()
	if b.meas.hops == nil {
		return nil, fmt.Errorf("the receiver %s is on host %s, whose hops are not read from here", b.receiverNode(), host)
	}
	a := remote.TCPAsk{Node: b.receiverNode(), Dst: job.Dst, Port: job.Port, BusyPoll: job.BusyPoll}
	return b.meas.hops.ListenTCP(host, a, correction(b.meas.hops.Clock(host)))
}

// end waits for the path to settle, reads the probe, the counters and the
// host, and makes the report.
func (m *tcpMeasure) end(res *tcpflow.Result, runErr error) (*report.Report, error) {
	b := m.b
	settle(b.meas.sampler, b.remote())
	loaded, loadedSeq, perr := m.loading.finish()
	m.st.stopWatch()
	after, err := snapshot(b.meas.routers, &b.cost)
	m.st.samples = m.st.stop()
	if runErr != nil || err != nil || perr != nil {
		return nil, errors.Join(runErr, err, perr)
	}
	kAfter, err := kstat.TCPCounters(m.sender)
	if err != nil {
		return nil, err
	}
	final, neighbours, err := b.meas.final()
	if err != nil {
		return nil, err
	}
	b.meas.withRemoteRouters(&m.st.before, &after)
	rep := b.tcpReport(res, m.st, final, neighbours, after)
	rep.TCP.Losses.Kernel = tcp.ReasonCounts(m.kBefore, kAfter)
	rep.TCP.Latency = tcp.Latency(m.idle, loaded, m.idleSeq, loadedSeq)
	account.Fidelity(rep, b.meas.qdiscs, tcp.Frame(rep.TCP, b.t.To.Is6()), b.fileImpair) // the delay from the probe's idle latency
	tcp.Judge(rep, b.place)
	return rep, nil
}

// tcpReport makes a TCP run's report from its readings: the path and
// its hops' counters, the CPUs, and the flows with their losses.
func (b *Bench) tcpReport(res *tcpflow.Result, st *running, final sample.Sample, neighbours []control, after hostState) *report.Report {
	t := b.t
	rep := &report.Report{Lab: b.run.Lab.Name, Traffic: t.Name, Variant: b.opts.Variant, Block: b.opts.Block, From: t.From.String(), To: t.To.String(),
		Engine: tcp.Engine, Elapsed: res.Elapsed, Path: b.path.Hops, NextHop: b.path.NextHop.String(), NextHopMAC: b.path.SenderMAC().String(),
		Differences: differenceWords(b.path.Differences), Targets: b.meas.targets, HopRoles: b.meas.roles, Samples: append(st.samples, final),
		Shapers: b.meas.shaperRates(), Env: b.env, Started: st.start, Ended: st.end}
	rep.Hops = hopCounters(b.meas, st.base, final, neighbours)
	account.RouterCounts(rep, st.before.routers(), after.routers(), t.To.Is6())
	rep.CPU = report.CPUUses(st.before.cpu, after.cpu)
	b.place.Label(rep.CPU)
	rep.Softnet = report.SoftnetUses(st.before.softnet, after.softnet)
	rep.OtherHosts = b.otherHostsCPUs()
	rep.TCP = tcp.Run(res, rep.Hops, b.meas.qdiscs, rep.Softnet)
	return rep
}
