package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"io"
	"maps"
	"strings"
	"sync"

	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/tcpflow"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// Several traffic runs at once ("streams"): each has its own bench (its
// engine instance, sender CPUs, path and counters), they are primed and
// read together, and their engines run at the same time. Each stream is
// counted at its own receiver: by the receiving interface's rx counter,
// or, where that interface receives another stream too, by the UDP
// destination port (see sample.UDPPort). Interfaces two streams cross in
// the same direction carry both, so drops there are named in the group's
// aggregate, whose accounting takes every counter once.

// Group measures several traffic runs of a running lab together.
type Group struct {
	benches []*Bench
	ports   []*sample.UDPPort // per stream: its receiver's port counter; nil where the interface's counter is its own
	shared  [][]string        // per stream: the counters it shares with others ("gw:wan0 tx (with b)")
	sharedT []map[string]bool // per stream: targets whose counter it shares
}

// groupRun is one measured run of a group: per stream, its engine's job
// (a UDP run) or its TCP phases (a TCP run), its samplers, and what it
// ended with.
type groupRun struct {
	jobs    []engine.Job
	tcp     []*tcpMeasure
	states  []*running
	results []*engine.Result
	flows   []*tcpflow.Result
	errs    []error
}

// NewGroup prepares the streams ts of running lab r. Each stream sends from
// an interface of its own; streams that arrive at one interface send to
// different UDP ports.
func NewGroup(r *lab.Running, ts []*spec.Traffic, o Options) (*Group, error) {
	if err := checkStreams(ts); err != nil {
		return nil, err
	}
	g := &Group{}
	for _, t := range ts {
		opts := o
		if o.Live != nil {
			opts.Live, opts.Compact = &prefixWriter{w: o.Live, prefix: t.Name + ": "}, true
		}
		b, err := New(r, t, opts)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.benches = append(g.benches, b)
	}
	if err := g.findShared(r); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// checkStreams refuses streams that cannot be counted apart: two from one
// interface, or two to one address and port. A TCP run's sink and latency
// probe have ports of their own: two TCP runs to one node, or a UDP run to
// a TCP run's address at its probe's port, are refused too.
func checkStreams(ts []*spec.Traffic) error {
	from := map[spec.Endpoint]string{}
	to := map[string]string{}
	tcpTo := map[string]string{}
	for _, t := range ts {
		if other, ok := from[t.From]; ok {
			return fmt.Errorf("streams %s and %s both send from %s: the sender's counter could not tell them apart; send from another interface, or use threads: in one run", other, t.Name, t.From)
		}
		from[t.From] = t.Name
		port := t.Flow().Port
		if t.TCP != nil {
			if other, ok := tcpTo[t.To.String()]; ok {
				return fmt.Errorf("TCP runs %s and %s both go to %s: their sinks would share a port; give one run the flows of both (tcp: {flows: N})", other, t.Name, t.To)
			}
			tcpTo[t.To.String()] = t.Name
			port = probePort
		}
		key := fmt.Sprintf("%s UDP port %d", t.To, port)
		if other, ok := to[key]; ok {
			return fmt.Errorf("streams %s and %s both send to %s (a TCP run's latency probe takes port %d): give the UDP run another destination port (dst_ports: 10)", other, t.Name, key, probePort)
		}
		to[key] = t.Name
	}
	return nil
}

// counterKey names an interface counter in the direction a role reads it.
func counterKey(target, role string) string {
	if account.IsOut(role) {
		return target + " tx"
	}
	return target + " rx"
}

// findShared finds the counters streams share, and opens a port counter at
// each receiver another stream also arrives at.
func (g *Group) findShared(r *lab.Running) error {
	users := map[string][]int{}
	for i, b := range g.benches {
		for k, t := range b.meas.targets {
			key := counterKey(t.String(), b.meas.roles[k])
			users[key] = append(users[key], i)
		}
	}
	g.ports = make([]*sample.UDPPort, len(g.benches))
	g.shared = make([][]string, len(g.benches))
	g.sharedT = make([]map[string]bool, len(g.benches))
	for i, b := range g.benches {
		g.sharedT[i] = map[string]bool{}
		for k, t := range b.meas.targets {
			key := counterKey(t.String(), b.meas.roles[k])
			var others []string
			for _, j := range users[key] {
				if j != i {
					others = append(others, g.benches[j].t.Name)
				}
			}
			if len(others) == 0 {
				continue
			}
			g.shared[i] = append(g.shared[i], fmt.Sprintf("%s (with %s)", key, strings.Join(others, ", ")))
			g.sharedT[i][t.String()] = true
			if b.meas.roles[k] == "receiver" && b.t.TCP == nil { // a TCP run counts itself by TCP_INFO
				if err := g.openPort(r, i, t); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// openPort opens stream i's port counter on its receiving interface.
func (g *Group) openPort(r *lab.Running, i int, t sample.Target) error {
	b := g.benches[i]
	link, err := r.Link(spec.Endpoint{Node: t.Node, Interface: t.Interface})
	if err != nil {
		return err
	}
	g.ports[i], err = sample.CountUDPPort(r.Node(t.Node).NS, link.Attrs().Index, b.t.To.Is6(), b.t.Flow().Port)
	return err
}

// Close releases every stream's bench and counters.
func (g *Group) Close() {
	for _, b := range g.benches {
		b.Close()
	}
	for _, p := range g.ports {
		if p != nil {
			p.Close()
		}
	}
}

// Run measures every stream at one frame size, together. A stream whose
// engine fails stops the others; what was measured is reported with the
// error. A TCP run's probe is measured idle first, before any stream
// starts.
func (g *Group) Run(ctx context.Context, frame int) (*report.GroupReport, error) {
	defer confine(g.placement(), g.benches[0].allowed)()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := len(g.benches)
	gr := &groupRun{jobs: make([]engine.Job, n), tcp: make([]*tcpMeasure, n), states: make([]*running, n),
		results: make([]*engine.Result, n), flows: make([]*tcpflow.Result, n), errs: make([]error, n)}
	defer gr.closeProbes()
	if err := g.prepare(ctx, gr, frame); err != nil {
		return nil, err
	}
	if err := g.startAll(ctx, gr, frame); err != nil {
		cancel()
		gr.stopAll()
		return nil, err
	}
	g.runEngines(ctx, gr)
	return g.finish(frame, gr)
}

// prepare measures the TCP runs' probes idle and primes the UDP runs'
// paths.
func (g *Group) prepare(ctx context.Context, gr *groupRun, frame int) error {
	for i, b := range g.benches {
		if b.t.TCP == nil {
			continue
		}
		m, err := b.idleTCP(ctx)
		if err != nil {
			return fmt.Errorf("stream %s: %w", b.t.Name, err)
		}
		gr.tcp[i] = m
	}
	for i, b := range g.benches {
		if b.t.TCP != nil {
			continue
		}
		gr.jobs[i] = b.job(b.t, frame)
		if err := b.prime(ctx, gr.jobs[i]); err != nil {
			return fmt.Errorf("stream %s: %w", b.t.Name, err)
		}
	}
	return nil
}

// startAll reads every stream's counters at the start and starts its
// samplers (and a TCP run's probe under load).
func (g *Group) startAll(ctx context.Context, gr *groupRun, frame int) error {
	for i, b := range g.benches {
		if m := gr.tcp[i]; m != nil {
			if err := m.begin(ctx); err != nil {
				return fmt.Errorf("stream %s: %w", b.t.Name, err)
			}
			gr.states[i] = m.st
			continue
		}
		st, err := b.start(b.t, frame)
		if err != nil {
			return fmt.Errorf("stream %s: %w", b.t.Name, err)
		}
		gr.states[i] = st
		if p := g.ports[i]; p != nil {
			if _, err := p.Count(); err != nil { // zero it
				return err
			}
		}
	}
	return nil
}

// runEngines runs every stream's engine (or TCP flows) at once; the first
// to fail cancels the others.
func (g *Group) runEngines(ctx context.Context, gr *groupRun) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, b := range g.benches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m := gr.tcp[i]; m != nil {
				gr.flows[i], gr.errs[i] = m.flows(ctx)
			} else {
				gr.results[i], gr.errs[i] = gr.states[i].run(ctx, b.eng, gr.jobs[i])
			}
			if gr.errs[i] != nil && !errors.Is(gr.errs[i], context.Canceled) {
				cancel()
			}
		}()
	}
	wg.Wait()
}

// stopAll stops the samplers of the streams started so far, and the
// probes under load (their context cancelled).
func (gr *groupRun) stopAll() {
	for i, st := range gr.states {
		if st == nil {
			continue
		}
		st.stop()
		st.stopWatch()
		if st.reader != nil {
			_, _ = st.reader.stop(0, remote.ArrivalsAsk{}) // the group failed to start: that error is the one to report
		}
		if m := gr.tcp[i]; m != nil && m.loading != nil {
			_, _, _ = m.loading.finish() // likewise
		}
	}
}

// closeProbes releases the TCP runs' probe sinks.
func (gr *groupRun) closeProbes() {
	for _, m := range gr.tcp {
		if m != nil {
			m.pr.close()
		}
	}
}

// finish reads every stream's end, makes its report, and the aggregate.
func (g *Group) finish(frame int, gr *groupRun) (*report.GroupReport, error) {
	out := &report.GroupReport{Frame: frame}
	var runErr error
	for i, b := range g.benches {
		var rep *report.Report
		var err error
		if m := gr.tcp[i]; m != nil {
			rep, err = m.end(gr.flows[i], gr.errs[i])
		} else {
			rep, err = b.finish(b.t, frame, gr.states[i], gr.results[i], gr.errs[i])
		}
		if err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("stream %s: %w", b.t.Name, err))
		}
		if rep == nil {
			continue
		}
		if rep.TCP != nil {
			g.tcpApart(i, rep)
		} else if err := g.countApart(i, rep); err != nil {
			runErr = errors.Join(runErr, err)
		}
		out.Streams = append(out.Streams, rep)
	}
	if len(out.Streams) == len(g.benches) {
		out.Aggregate = g.aggregate(out.Streams)
		g.judge(frame, out.Streams, &out.Aggregate)
	}
	return out, runErr
}

// placement is every stream's placement together: the nodes each path
// places, and their napi nodes (for keeping nslab's threads off them, and
// for the aggregate's verdict).
func (g *Group) placement() account.Placement {
	p := g.benches[0].place
	p.ByNode, p.NAPI = maps.Clone(p.ByNode), maps.Clone(p.NAPI)
	for _, b := range g.benches[1:] {
		maps.Copy(p.ByNode, b.place.ByNode)
		maps.Copy(p.NAPI, b.place.NAPI)
	}
	return p
}

// prefixWriter starts every line written through it with a prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mu     sync.Mutex
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := strings.SplitAfter(string(b), "\n")
	var sb strings.Builder
	for _, l := range lines {
		if l != "" {
			sb.WriteString(p.prefix + l)
		}
	}
	if _, err := io.WriteString(p.w, sb.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}
