// Package events is the changes a bench makes to a running lab while its
// traffic runs (links down and up, impairments, nodes stopped and started,
// an edited file applied): parsing and checking them, applying each at its
// moment, and counting the traffic that went round the path meanwhile.
package events

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
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

// Parse reads TIME:down:NODE:IF, TIME:up:NODE:IF,
// TIME:impair:NODE:IF:KEY=VALUE,... (delay, jitter, loss, duplicate,
// reorder, corrupt, rate, limit, as nslab impair's flags),
// TIME:clear:NODE:IF, TIME:stop:NODE or TIME:start:NODE (as nslab node
// stop and start), or TIME:apply:FILE (as nslab apply FILE).
func Parse(s string) (Event, error) {
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

// Check checks events against the lab l (this host's part of a lab that
// spans hosts): each names an interface of a node on this host; or, when
// elsewhere (the bench reaches the other hosts), of a node on any host,
// but no apply, which changes every host.
func Check(l *spec.Lab, events []Event, elsewhere bool) error {
	for _, e := range events {
		n := l.Model().Node(e.Where.Node)
		switch {
		case e.Apply != nil && elsewhere:
			return fmt.Errorf("event %s: lab %s spans hosts, and an apply changes each: apply the file from where you deploy it (nslab apply FILE), or use down, up, impair, clear, stop and start events", e, l.Name)
		case e.Apply != nil && e.Apply.Name != l.Name:
			return fmt.Errorf("event %s: %s is lab %s, not %s", e, e.Apply.File, e.Apply.Name, l.Name)
		case e.Apply != nil:
		case n == nil:
			return fmt.Errorf("event %s: no node %s", e, e.Where.Node)
		case e.Where.Interface == "" && n.Segment:
			return fmt.Errorf("event %s: %s is a segment (a switch), not a node: stop the nodes on it", e, e.Where.Node)
		case e.Where.Interface != "" && n.Interface(e.Where.Interface) == nil:
			return fmt.Errorf("event %s: node %s has no interface %s", e, e.Where.Node, e.Where.Interface)
		case !l.Local(e.Where.Node) && !elsewhere:
			return fmt.Errorf("event %s: %s is on host %s: run the bench from where the lab was deployed (it reaches every host), or on host %s", e, e.Where.Node, n.Host, n.Host)
		}
	}
	return nil
}

// Do makes event e on running lab r.
//
// Equivalent to: ip -n NS link set IF down|up; nslab impair NODE:IF ...; nslab node stop|start NODE
func (e Event) Do(ctx context.Context, r *lab.Running) error {
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

// Elsewhere makes an event on a node of another host (its agent does),
// and returns when it is made.
type Elsewhere func(host string, e Event) error

// Schedule applies the events at their moments from now, each in turn,
// until ctx ends, those on other hosts' nodes by elsewhere; the returned
// wait stops the Schedule and returns what was done (an event not yet due
// is not applied).
func Schedule(ctx context.Context, r *lab.Running, events []Event, elsewhere Elsewhere) func() []report.Event {
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
			if host := hostOf(r, e); host != "" {
				out[i].What += " (host " + host + ")"
			}
		}
		for i, e := range events {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start.Add(e.At))):
			}
			out[i].Applied = time.Since(start)
			var err error
			if host := hostOf(r, e); host != "" && elsewhere != nil {
				err = elsewhere(host, e)
			} else {
				err = e.Do(ctx, r)
			}
			if err != nil {
				out[i].Err = err.Error()
			}
		}
	}()
	return func() []report.Event { cancel(); wg.Wait(); return out }
}

// hostOf is the other host whose node e is on; "" when it is this one's
// (or the lab's whole, an apply).
func hostOf(r *lab.Running, e Event) string {
	if e.Apply != nil || r.Lab.Local(e.Where.Node) {
		return ""
	}
	if n := r.Lab.Model().Node(e.Where.Node); n != nil {
		return n.Host
	}
	return ""
}

// LinkCounts reads every interface's packet counters in the lab's local
// nodes (NODE:IF -> rx, tx).
func LinkCounts(r *lab.Running) map[string][2]uint64 {
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

// OffPath are, in a run with events, every lab interface's packet
// counters at the start and the control frames each receives (sample.
// CountNeighbours: what is not a run's, ARP and the daemons' hellos and
// updates among them), so that what a detour carried of the run is told
// from the daemons' own packets.
type OffPath struct {
	start   map[string][2]uint64
	control map[string]*sample.Neighbours
	peer    map[string]string // NODE:IF -> the other end of its link
}

// OpenOffPath reads the counters and opens the control frame counters of
// every local lab interface (lo aside).
func OpenOffPath(r *lab.Running, ipv6 bool) (*OffPath, error) {
	c := &OffPath{control: map[string]*sample.Neighbours{}, peer: map[string]string{}}
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
				c.Close()
				return nil, err
			}
			c.control[ep.String()] = ctl
		}
	}
	c.start = LinkCounts(r)
	for _, ctl := range c.control {
		if _, err := ctl.Count(); err != nil { // from here on
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *OffPath) Close() {
	for _, ctl := range c.control {
		ctl.Close()
	}
}

// Deltas is what each local lab interface counted since OpenOffPath
// (lo aside), by NODE:IF.
func (c *OffPath) Deltas(r *lab.Running) map[string]remote.Counted {
	out := map[string]remote.Counted{}
	for key, b := range LinkCounts(r) {
		a, ok := c.start[key]
		if !ok || strings.HasSuffix(key, ":lo") {
			continue
		}
		d := remote.Counted{Rx: sat(b[0], a[0]), Tx: sat(b[1], a[1])}
		if n := c.control[key]; n != nil {
			d.Control, _ = n.Count() // unreadable: none taken off
		}
		out[key] = d
	}
	return out
}

// Detour lists the interfaces off path that carried 100 or more of the
// run's packets since OpenOffPath: each one's rx less the control frames
// it received, and tx less those its link's other end received. The
// local interfaces are read here; elsewhere holds the other hosts'
// (remote.OffPath), whose links' ends may be on this host or another.
func (c *OffPath) Detour(r *lab.Running, path []walk.Hop, elsewhere map[string]remote.Counted) []report.HopDelta {
	counted := c.Deltas(r)
	maps.Copy(counted, elsewhere)
	return detour(counted, c.peer, path)
}

// detour is the interfaces of counted (every host's, by NODE:IF) off path
// that carried detourMin of the run's packets or more, less the control
// frames: those each received, and those its link's other end (peer)
// received of what it sent.
func detour(counted map[string]remote.Counted, peer map[string]string, path []walk.Hop) []report.HopDelta {
	on := map[string]bool{}
	for _, h := range path {
		on[h.Node+":"+h.In], on[h.Node+":"+h.Out] = true, true
	}
	out := []report.HopDelta{}
	for key, d := range counted {
		if on[key] {
			continue
		}
		h := report.HopDelta{Interface: key, Rx: sat(d.Rx, d.Control), Tx: sat(d.Tx, counted[peer[key]].Control)}
		if max(h.Rx, h.Tx) >= detourMin {
			out = append(out, h)
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

// HopNames is a path as NODE:IN>OUT words.
func HopNames(hops []walk.Hop) []string {
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

// RoundThePath gives each node on the path what it sent (Detour, on its
// egress hop) and received (Joined, on its ingress hop) of the run by
// interfaces off the path, so its accounting counts the traffic that went
// round.
func RoundThePath(hops []report.HopCounters, off []report.HopDelta) {
	for i := range hops {
		h := &hops[i]
		for _, d := range off {
			if node, _, _ := strings.Cut(d.Interface, ":"); node != h.Node {
				continue
			}
			switch {
			case account.IsIn(h.Role):
				h.Joined += d.Rx
			case account.IsOut(h.Role):
				h.Detour += d.Tx
			}
		}
	}
}

// Side is this host's part of a bench run on another host, in this
// host's namespaces (remote.Side): the events placed on its nodes, made
// on r, and its lab interfaces counted off the path.
func Side(ctx context.Context, r *lab.Running) remote.Side { return &side{ctx: ctx, r: r} }

type side struct {
	ctx context.Context
	r   *lab.Running
	off *OffPath
}

func (s *side) Event(text string) error {
	e, err := Parse(text)
	switch {
	case err != nil:
		return err
	case e.Apply != nil:
		return errors.New("an apply is not made on one host")
	case !s.r.Lab.Local(e.Where.Node):
		return fmt.Errorf("%s is not on this host", e.Where.Node)
	}
	return e.Do(s.ctx, s.r)
}

func (s *side) OpenOffPath(ipv6 bool) error {
	s.Close()
	var err error
	s.off, err = OpenOffPath(s.r, ipv6)
	return err
}

func (s *side) OffPath() (map[string]remote.Counted, error) {
	if s.off == nil {
		return nil, errors.New("off-path counters read before they were opened")
	}
	return s.off.Deltas(s.r), nil
}

func (s *side) Close() {
	if s.off != nil {
		s.off.Close()
		s.off = nil
	}
}
