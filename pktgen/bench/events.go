package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/check"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/walk"
)

// Events are changes made to the running lab while the traffic runs (a
// failover test: RFC 6412/6413): a link taken down or up, an impairment
// set or cleared, a node stopped or started, each at a moment after the
// sending starts. The report's Failover says what they did.

// Event is one change at a moment of a run.
type Event struct {
	At     time.Duration // from the start of sending
	Action string        // down, up, impair, clear, stop, start or apply
	Where  spec.Endpoint // for stop and start, the node alone; none for apply
	Impair *spec.Impair  // for impair
	Apply  *spec.Lab     // for apply: the edited file
	text   string
}

// String is the event as written.
func (e Event) String() string { return e.text }

// ParseEvent reads TIME:down:NODE:IF, TIME:up:NODE:IF,
// TIME:impair:NODE:IF:KEY=VALUE,... (delay, jitter, loss, duplicate,
// reorder, corrupt, rate, limit, as nslab impair's flags),
// TIME:clear:NODE:IF, TIME:stop:NODE or TIME:start:NODE (as nslab node
// stop and start), or TIME:apply:FILE (as nslab apply FILE).
func ParseEvent(s string) (Event, error) {
	if at, file, ok := strings.Cut(s, ":apply:"); ok {
		return parseApply(s, at, file)
	}
	parts := strings.SplitN(s, ":", 5)
	if len(parts) == 3 && (parts[1] == "stop" || parts[1] == "start") {
		at, err := time.ParseDuration(parts[0])
		if err != nil || at < 0 {
			return Event{}, fmt.Errorf("event %q: %q is not a time from the start of sending (2s, 1500ms)", s, parts[0])
		}
		return Event{At: at, Action: parts[1], Where: spec.Endpoint{Node: parts[2]}, text: s}, nil
	}
	if len(parts) < 4 {
		return Event{}, fmt.Errorf("event %q: write TIME:down|up|impair|clear:NODE:IF (2s:down:r1:eth1) or TIME:stop|start:NODE (2s:stop:r1)", s)
	}
	at, err := time.ParseDuration(parts[0])
	if err != nil || at < 0 {
		return Event{}, fmt.Errorf("event %q: %q is not a time from the start of sending (2s, 1500ms)", s, parts[0])
	}
	e := Event{At: at, Action: parts[1], Where: spec.Endpoint{Node: parts[2], Interface: parts[3]}, text: s}
	switch e.Action {
	case "stop", "start":
		return Event{}, fmt.Errorf("event %q: %s takes a node alone: %s:%s:%s", s, e.Action, parts[0], e.Action, parts[2])
	case "down", "up", "clear":
		if len(parts) == 5 {
			return Event{}, fmt.Errorf("event %q: %s takes no settings", s, e.Action)
		}
	case "impair":
		if len(parts) < 5 {
			return Event{}, fmt.Errorf("event %q: say what the link does: %s:impair:%s:%s:loss=5%%,delay=10ms", s, parts[0], parts[2], parts[3])
		}
		if e.Impair, err = parseImpair(parts[4]); err != nil {
			return Event{}, fmt.Errorf("event %q: %w", s, err)
		}
	default:
		return Event{}, fmt.Errorf("event %q: %q is not down, up, impair, clear, stop or start", s, e.Action)
	}
	return e, nil
}

// parseApply reads TIME:apply:FILE, FILE a lab file.
func parseApply(s, at, file string) (Event, error) {
	d, err := time.ParseDuration(at)
	if err != nil || d < 0 {
		return Event{}, fmt.Errorf("event %q: %q is not a time from the start of sending (2s, 1500ms)", s, at)
	}
	l, err := spec.ReadFile(file)
	if err != nil {
		return Event{}, fmt.Errorf("event %q: %w", s, err)
	}
	return Event{At: d, Action: "apply", Apply: l, text: s}, nil
}

// parseImpair reads KEY=VALUE,... as nslab impair's flags (spec.Impair.Set).
func parseImpair(s string) (*spec.Impair, error) {
	m := &spec.Impair{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: write KEY=VALUE (loss=5%%)", kv)
		}
		if err := m.Set(k, v); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if key, msg := m.Problem(); msg != "" {
		return nil, fmt.Errorf("%s: %s", key, msg)
	}
	return m, nil
}

// CheckEvents checks events against the lab: each names an interface of
// a node on this host.
func CheckEvents(l *spec.Lab, events []Event) error {
	for _, e := range events {
		n := l.Node(e.Where.Node)
		switch {
		case e.Apply != nil && e.Apply.Name != l.Name:
			return fmt.Errorf("event %s: %s is lab %s, not %s", e, e.Apply.File, e.Apply.Name, l.Name)
		case e.Apply != nil:
		case n == nil:
			return fmt.Errorf("event %s: no node %s", e, e.Where.Node)
		case e.Where.Interface == "" && n.Segment:
			return fmt.Errorf("event %s: %s is a segment (a switch), not a node: stop the nodes on it", e, e.Where.Node)
		case e.Where.Interface == "" && !l.Local(e.Where.Node):
			return fmt.Errorf("event %s: %s is on another host", e, e.Where.Node)
		case e.Where.Interface == "":
		case n.Interface(e.Where.Interface) == nil:
			return fmt.Errorf("event %s: node %s has no interface %s", e, e.Where.Node, e.Where.Interface)
		case !l.Local(e.Where.Node):
			return fmt.Errorf("event %s: %s is on another host", e, e.Where.Node)
		}
	}
	return nil
}

// apply makes event e on running lab r.
//
// Equivalent to: ip -n NS link set IF down|up; nslab impair NODE:IF ...; nslab node stop|start NODE
func (e Event) apply(ctx context.Context, r *lab.Running) error {
	switch e.Action {
	case "apply":
		_, err := r.Apply(ctx, e.Apply)
		return err
	case "stop":
		return r.StopNode(e.Where.Node)
	case "start":
		return r.StartNode(ctx, e.Where.Node)
	case "down":
		return r.SetLink(e.Where, false)
	case "up":
		return r.SetLink(e.Where, true)
	case "impair":
		return r.Impair(e.Where, e.Impair)
	default:
		_, err := r.ClearImpair(e.Where)
		return err
	}
}

// schedule applies the events at their moments from now, each in turn,
// until ctx ends; the returned wait stops the schedule and returns what
// was done (an event not yet due is not applied).
func schedule(ctx context.Context, r *lab.Running, events []Event) func() []report.Event {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	out := make([]report.Event, len(events))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, e := range events {
			out[i] = report.Event{What: e.Action + " " + e.Where.String(), At: e.At, Applied: -1}
			switch {
			case e.Apply != nil:
				out[i].What = "apply " + e.Apply.File
			case e.Where.Interface == "":
				out[i].What = e.Action + " node " + e.Where.Node
			}
			if e.Impair != nil {
				out[i].What += " " + e.Impair.String()
			}
		}
		for i, e := range events {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start.Add(e.At))):
			}
			out[i].Applied = time.Since(start)
			if err := e.apply(ctx, r); err != nil {
				out[i].Err = err.Error()
			}
		}
	}()
	return func() []report.Event { cancel(); wg.Wait(); return out }
}

// linkCounts reads every interface's packet counters in the lab's local
// nodes (NODE:IF -> rx, tx).
func linkCounts(r *lab.Running) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, n := range r.Lab.Nodes {
		node := r.Node(n.Name)
		if node == nil {
			continue
		}
		links, err := nlsafe.LinkList(node.Handle)
		if err != nil {
			continue // counted as nothing: the detour's counters are then missing
		}
		for _, l := range links {
			if s := l.Attrs().Statistics; s != nil {
				out[n.Name+":"+l.Attrs().Name] = [2]uint64{s.RxPackets, s.TxPackets}
			}
		}
	}
	return out
}

// offPathCounts are, in a run with events, every lab interface's packet
// counters at the start and the control frames each receives (sample.
// CountNeighbours: ARP and what is not UDP, the daemons' hellos and
// updates among them), so that what a detour carried of the run is told
// from the daemons' own packets.
type offPathCounts struct {
	start   map[string][2]uint64
	control map[string]*sample.Neighbours
	peer    map[string]string // NODE:IF -> the other end of its link
}

// openOffPath reads the counters and opens the control frame counters of
// every local lab interface (lo aside).
func openOffPath(r *lab.Running, ipv6 bool) (*offPathCounts, error) {
	c := &offPathCounts{control: map[string]*sample.Neighbours{}, peer: map[string]string{}}
	for _, l := range r.Lab.Model().Links {
		c.peer[l.A.String()], c.peer[l.B.String()] = l.B.String(), l.A.String()
	}
	for _, n := range r.Lab.Nodes {
		for _, i := range n.Interfaces {
			ep := spec.Endpoint{Node: n.Name, Interface: i.Name}
			link, err := r.Link(ep)
			if i.Kind == spec.KindLoopback || err != nil {
				continue // not made (yet): its counts are missing, as the interface is
			}
			ctl, err := sample.CountNeighbours(r.Node(n.Name).NS, link.Attrs().Index, ipv6)
			if err != nil {
				c.close()
				return nil, err
			}
			c.control[ep.String()] = ctl
		}
	}
	c.start = linkCounts(r)
	for _, ctl := range c.control {
		if _, err := ctl.Count(); err != nil { // from here on
			c.close()
			return nil, err
		}
	}
	return c, nil
}

func (c *offPathCounts) close() {
	for _, ctl := range c.control {
		ctl.Close()
	}
}

// detour lists the interfaces off path that carried 100 or more of the
// run's packets since openOffPath: each one's rx less the control frames
// it received, and tx less those its link's other end received.
func (c *offPathCounts) detour(r *lab.Running, path []walk.Hop) []report.HopDelta {
	end := linkCounts(r)
	ctl := map[string]uint64{}
	for key, n := range c.control {
		ctl[key], _ = n.Count() // unreadable: none taken off
	}
	on := map[string]bool{}
	for _, h := range path {
		on[h.Node+":"+h.In], on[h.Node+":"+h.Out] = true, true
	}
	out := []report.HopDelta{}
	for key, b := range end {
		a, ok := c.start[key]
		if on[key] || !ok || strings.HasSuffix(key, ":lo") {
			continue
		}
		d := report.HopDelta{Interface: key, Rx: sat(b[0]-a[0], ctl[key]), Tx: sat(b[1]-a[1], ctl[c.peer[key]])}
		if max(d.Rx, d.Tx) >= detourMin {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(x, y report.HopDelta) int { return strings.Compare(x.Interface, y.Interface) })
	return out
}

// sat is a - b, not below 0.
func sat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// hopNames is a path as NODE:IN>OUT words.
func hopNames(hops []walk.Hop) []string {
	var out []string
	for _, h := range hops {
		out = append(out, fmt.Sprintf("%s:%s>%s", h.Node, dashIf(h.In), dashIf(h.Out)))
	}
	return out
}

func dashIf(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// detourMin is how many of the run's packets an interface off the path
// must count over a run with events to be taken as part of a detour.
const detourMin = 100

// roundThePath gives each node on the path what it sent (Detour, on its
// egress hop) and received (Joined, on its ingress hop) of the run by
// interfaces off the path, so its accounting counts the traffic that went
// round.
func roundThePath(hops []report.HopCounters, off []report.HopDelta) {
	for i := range hops {
		h := &hops[i]
		for _, d := range off {
			if node, _, _ := strings.Cut(d.Interface, ":"); node != h.Node {
				continue
			}
			switch {
			case isIn(h.Role):
				h.Joined += d.Rx
			case isOut(h.Role):
				h.Detour += d.Tx
			}
		}
	}
}

// failover puts together what a run with events did (rep.Failover holds
// the detour already): the events, the outage by loss and by sequence
// gap, and the path traced again after the run, with the routes the
// daemons learned meanwhile.
func (b *Bench) failover(t *spec.Traffic, rep *report.Report, events []report.Event) *report.Failover {
	f := rep.Failover
	if f == nil {
		f = &report.Failover{}
	}
	f.Events, f.PathBefore = events, hopNames(b.path.Hops)
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
	run, err := b.runAfter(events)
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
	f.PathAfter = hopNames(now.Hops)
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
		summary, _ := pairs.Summary()
		fmt.Fprintf(progress, "routing converged: %s; %s\n", summary, conv)
	}
	return nil
}
