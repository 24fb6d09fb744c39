package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench/events"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/check"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// failover puts together what a run with events did (rep.Failover holds
// the detour already): the events, the outage by loss and by sequence
// gap, and the path traced again after the run, with the routes the
// daemons learned meanwhile.
func (b *Bench) failover(t *spec.Traffic, rep *report.Report, done []report.Event) *report.Failover {
	f := rep.Failover
	if f == nil {
		f = &report.Failover{}
	}
	f.Events, f.PathBefore = done, events.HopNames(b.path.Hops)
	if rep.Loss > 0 {
		f.Lost = uint64(rep.Loss)
	}
	if rep.Elapsed > 0 {
		f.SentPPS = float64(rep.Sent) / rep.Elapsed.Seconds()
	}
	if f.SentPPS > 0 {
		f.LossOutage = time.Duration(float64(f.Lost) / f.SentPPS * float64(time.Second))
	}
	switch {
	case rep.Sequence != nil:
		f.GapPackets, f.GapOutage = rep.Sequence.LongestGapPackets, time.Duration(rep.Sequence.LongestGapNs)
	case rep.SequenceNote != "":
		f.GapNote = rep.SequenceNote
	default:
		f.GapNote = "not read (the receiver's reader did not run)"
	}
	run, err := b.runAfter(done)
	if err != nil {
		f.PathNote = "not traced: " + err.Error()
		return f
	}
	if run != b.run {
		defer run.Close()
	}
	if err := run.Learn(); err != nil {
		f.PathNote = err.Error()
		return f
	}
	now, err := run.TraceFlow(t.From, t.To, t.Flow())
	if err != nil {
		f.PathNote = "not traced: " + err.Error()
		return f
	}
	f.PathAfter = events.HopNames(now.Hops)
	if now.Elsewhere != "" { // the other hosts' routes after the events are not read from here
		f.PathNote = fmt.Sprintf("%s; %s by the file, whose routes the events may have changed there (their kernels are not asked from here: the detour above is what was counted)",
			strings.Join(f.PathAfter, " -> "), now.Elsewhere)
		return f
	}
	f.Rerouted = strings.Join(f.PathAfter, " ") != strings.Join(f.PathBefore, " ")
	return f
}

// runAfter is the lab as the run left it: the bench's, or, after an
// apply event that changed it, the applied file's, opened afresh (its
// nodes and interfaces may be new).
func (b *Bench) runAfter(done []report.Event) (*lab.Running, error) {
	var applied *spec.Lab
	for i, e := range b.opts.Events {
		if e.Apply != nil && i < len(done) && done[i].Applied >= 0 && done[i].Err == "" {
			applied = e.Apply
		}
	}
	if applied == nil {
		return b.run, nil
	}
	return b.run.Reopen(applied)
}

// Routing convergence before a bench: check --wait's engine, so bench and
// check agree on when a lab's daemons have converged.
const (
	routingSettle = 2 * time.Second
	// DefaultRoutingWait bounds the wait unless Request.Wait says
	// otherwise: OSPF's default timers need about 45 s.
	DefaultRoutingWait = 90 * time.Second
)

// awaitRouting waits, in a lab whose nodes run routing daemons, until
// check.Converge says the routing has converged (the routing tables
// unchanged for routingSettle and every pair answering as the kernels'
// routes and the file's expect: say), up to wait (0: DefaultRoutingWait);
// it says so on progress (nil: quiet). A lab without daemons returns at
// once, its kernels read.
func awaitRouting(ctx context.Context, r *lab.Running, wait time.Duration, progress io.Writer) error {
	routing := false
	for _, n := range r.Lab.Nodes {
		routing = routing || n.RunsRouting()
	}
	if !routing {
		return r.Learn()
	}
	if wait <= 0 {
		wait = DefaultRoutingWait
	}
	pairs, conv, err := check.Converge(ctx, r.Opened, check.Options{Timeout: 300 * time.Millisecond, Tries: 1}, wait, routingSettle, check.Mark{})
	if err != nil {
		return fmt.Errorf("the lab's routing daemons have not converged: %w (give them longer (wait), or check the lab)", err)
	}
	if progress != nil {
		// A line: how long it took and that every pair answered as the
		// routes say (check --wait gives the whole of both).
		_, bad := pairs.Summary()
		answered := "every pair as the routes say"
		if bad {
			answered = "not every pair as the routes say (nslab check says which)"
		}
		fmt.Fprintf(progress, "routing converged in %.2f s (%d pairs checked): %s\n", conv.Took.Seconds(), len(pairs), answered)
	}
	return nil
}
