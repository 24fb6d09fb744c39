package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/nslab/nslab/internal/caps"
	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/pktgen/bench/search"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/rootless"
	"github.com/nslab/nslab/topology/spec"
)

// Request is a whole nslab bench invocation: one traffic run (checked by
// Traffic) at each of its frame sizes, measured or searched, or several
// runs (checked by Streams) measured together at each frame size.
type Request struct {
	Lab     *spec.Lab
	Traffic *spec.Traffic
	// Streams are several traffic runs measured together (see Group),
	// Traffic the first of them; nil or one: Traffic alone.
	Streams []*spec.Traffic
	Search  *search.Options        // the binary search (RFC 2544's); nil: none
	MLR     *search.MLROptions     // MLRsearch; nil: none (neither: one measured run per frame size)
	RFC2544 *search.RFC2544Options // RFC 2544's four benchmarks; nil: none
	// LatencyAt measures each frame size at these fractions of the run's
	// rate, or of its top rate (see Bench.LatencyAt).
	LatencyAt []float64
	// Repeat measures (or searches) every frame size this many times, in
	// interleaved rounds, and summarises each figure (Outcome.Summaries).
	Repeat int
	// Variants are lab variants (see spec.Variant) measured in turn,
	// round after round, each compared with the first
	// (Outcome.Comparisons); none: the lab as deployed.
	Variants []string
	// Margin is what "no change" means in a comparison of variants (a
	// fraction: 0.03 for 3%; 0: DefaultMargin); MaxTime how long it may
	// measure (0: DefaultMaxTime per variant compared); Figure the figure
	// it decides on ("": the most sensitive the run has).
	Margin  float64
	MaxTime time.Duration
	Figure  string
	// FileVariant, when set, is one of Variants made of another version
	// of the lab's file: the lab has it, and a duet's twin gets it.
	FileVariant *FileVariant
	// Duet measures the variants two at a time at once, in the lab and
	// in a twin of it deployed for the run (duet.go); DuetAuto measures a
	// lab that cannot be twinned in sequential pairs instead of refusing.
	Duet, DuetAuto bool
	// CheckSensitivity measures a positive control first (control.go):
	// the first variant (or base) against itself with ControlRules
	// firewall rules that match nothing added to the routers (0:
	// compare.DefaultControlRules), in the set-up of the comparison; "no change"
	// is said only where such a control moved.
	CheckSensitivity bool
	ControlRules     int
	// control is the positive control that vouches for this run's set-up
	// (measured first, or found saved); replaced why the set-up asked for
	// was replaced (a duet at full load measured in sequential pairs).
	control  *report.Control
	replaced string
	// controlName and controlBase are the control variant's name and the
	// variant it adds the cost to, while the control is measured.
	controlName, controlBase string
	// Placement is on (the file's CPU placement, refused where the
	// machine cannot give it), auto (left out, and the report says why,
	// where the machine cannot give it) or off (left out).
	Placement string
	Keep      bool // keep a lab the sweep deployed
	// Wait bounds the wait for a lab's routing daemons to converge
	// (0: DefaultRoutingWait).
	Wait    time.Duration
	Results Results // each finished run or search as one JSON line; nil: none
	// Progress gets a line per frame size and what the sweep deploys;
	// nil: quiet.
	Progress io.Writer
	Options
}

// Results is where finished runs go, one JSON line each, synced at once
// (a results file: a crash or Ctrl-C never loses a finished run).
type Results interface {
	io.Writer
	Sync() error
}

var _ Results = (*os.File)(nil)

// Placement modes.
var PlacementModes = []string{"on", "auto", "off"}

// Outcome is what a sweep measured.
type Outcome struct {
	report.Results
	// Summaries are each figure's median, range and confidence interval
	// over Repeat rounds.
	Summaries []report.FigureSummary
	// Comparisons compare each variant after the first with the first.
	Comparisons []*report.Comparison
	Deployed    bool   // the sweep deployed the lab itself
	Unplaced    string // why the lab's placement was left out; "" when applied
	// Control is the positive control measured first (CheckSensitivity);
	// its comparison is the first of Comparisons.
	Control            *report.Control
	controlComparisons []*report.Comparison
}

// Sweep runs a request on this machine: it settles the placement, deploys
// the lab unless it is deployed already (and destroys it afterwards unless
// Keep), measures or searches every frame size of the traffic run, and
// appends each result to Results as it finishes. On an error the outcome
// holds what finished before it.
func Sweep(ctx context.Context, m *lab.Manager, req Request) (out *Outcome, err error) {
	out = &Outcome{}
	if len(req.Streams) > 1 && (req.Search != nil || req.MLR != nil || req.RFC2544 != nil || len(req.Measure) > 0) {
		return out, fmt.Errorf("a search, an RFC 2544 run and measured hops take one traffic run; %d were named", len(req.Streams))
	}
	if err := req.checkTCP(); err != nil {
		return out, err
	}
	if err := req.checkVariants(); err != nil {
		return out, err
	}
	if err := req.settleDuet(); err != nil {
		return out, err
	}
	if err := settlePlacement(&req); err != nil {
		return out, err
	}
	out.Unplaced = req.Lab.Unplaced
	deployed, err := deployOrReuse(ctx, m, req)
	if err != nil {
		return out, err
	}
	out.Deployed = deployed
	if deployed && !req.Keep {
		defer func() {
			if _, derr := m.Destroy(req.Lab.Name); derr != nil {
				err = errors.Join(err, fmt.Errorf("destroy lab %s: %w", req.Lab.Name, derr))
			}
		}()
	}
	r, err := m.Open(req.Lab)
	if err != nil {
		return out, err
	}
	defer r.Close()
	if err := awaitRouting(ctx, r, req.Wait, req.Progress); err != nil {
		return out, err
	}
	return out, req.measure(ctx, m, r, out)
}

// measure runs the request in the lab r, deployed and converged: several
// runs at once, a comparison of variants (or a positive control), or the
// runs of one traffic run.
func (req Request) measure(ctx context.Context, m *lab.Manager, r *lab.Running, out *Outcome) error {
	if len(req.Streams) > 1 {
		g, err := NewGroup(r, req.Streams, req.Options)
		if err != nil {
			return err
		}
		defer g.Close()
		return req.eachTogether(ctx, g, out)
	}
	if len(req.Variants) > 0 || req.CheckSensitivity {
		return req.compare(ctx, m, r, out)
	}
	b, err := New(r, req.Traffic, req.Options)
	if err != nil {
		return err
	}
	defer b.Close()
	return req.each(ctx, b, out)
}

// compare measures the positive control (CheckSensitivity), then
// compares the variants, with the control vouching for their "no change".
func (req Request) compare(ctx context.Context, m *lab.Manager, r *lab.Running, out *Outcome) error {
	var err error
	var fullLoad []*report.Comparison
	if req.asksFullLoad() {
		if req, fullLoad, err = req.settleFullLoad(ctx, m, r); err != nil {
			return err
		}
	}
	if req.CheckSensitivity {
		if out.Control, err = req.runControl(ctx, m, r, out); err != nil {
			return err
		}
		req.control = out.Control
	}
	if len(req.Variants) > 0 {
		err = req.eachVariant(ctx, m, r, out)
	}
	keepFullLoad(out.Comparisons, fullLoad)
	out.Comparisons = append(out.controlComparisons, out.Comparisons...)
	out.Summaries = report.Summaries(&out.Results, report.SummaryLevel)
	return err
}

// checkTCP refuses, for TCP runs (tcp:), what measures UDP frames only:
// searches of a rate, latency by sequence number, events and measured
// interfaces. (Several runs at once, TCP among them, are a group.)
func (req Request) checkTCP() error {
	tcp := req.Traffic != nil && req.Traffic.TCP != nil
	for _, t := range req.Streams {
		tcp = tcp || t.TCP != nil
	}
	if !tcp {
		return nil
	}
	for _, c := range []struct {
		set  bool
		what string
	}{
		{req.Search != nil || req.MLR != nil || req.RFC2544 != nil, "a search of the rate (search, search-binary, rfc2544)"},
		{len(req.LatencyAt) > 0 || req.Latency, "latency by sequence number (latency, latency-at)"},
		{len(req.Events) > 0, "events (event)"},
		{len(req.Measure) > 0, "measured interfaces (measure)"},
	} {
		if c.set {
			return fmt.Errorf("a TCP run (tcp:, or tcp) is measured without %s", c.what)
		}
	}
	return nil
}

// each measures or searches every frame size in turn, Repeat rounds of
// them (interleaved: every size once per round, so that the machine's
// drift spreads over all of them alike).
func (req Request) each(ctx context.Context, b *Bench, out *Outcome) error {
	frames := req.Traffic.Frames
	rounds := max(1, req.Repeat)
	for r := range rounds {
		for i, frame := range frames {
			if rounds > 1 {
				req.progress("round %d/%d: ", r+1, rounds)
			}
			if err := req.one(ctx, b, frame, fmt.Sprintf("[%d/%d]", i+1, len(frames)), len(frames) > 1, out); err != nil {
				return err
			}
		}
	}
	if rounds > 1 {
		out.Summaries = report.Summaries(&out.Results, report.SummaryLevel)
	}
	return nil
}

// one measures or searches one frame size, and records what it finished.
func (req Request) one(ctx context.Context, b *Bench, frame int, which string, sweep bool, out *Outcome) error {
	var result any
	var err error
	switch {
	case req.RFC2544 != nil:
		req.progress("%s RFC 2544 benchmarks of %d-byte frames (throughput, latency, frame loss rate, back-to-back)\n", which, frame)
		var r *report.RFC2544Result
		r, err = b.RFC2544(ctx, frame, *req.RFC2544)
		if r != nil && r.Throughput.Search != nil {
			out.RFC2544, result = append(out.RFC2544, r), r
		}
	case req.MLR != nil:
		req.progress("%s MLRsearch of %d-byte frames\n", which, frame)
		var m *report.MLRResult
		m, err = b.MLRSearch(ctx, frame, *req.MLR)
		if m != nil && len(m.Trials) > 0 {
			out.MLR, result = append(out.MLR, m), m
		}
	case req.Search != nil:
		req.progress("%s searching the throughput of %d-byte frames\n", which, frame)
		var s *report.SearchResult
		s, err = b.Search(ctx, frame, *req.Search)
		if s != nil && len(s.Trials) > 0 {
			out.Searches, result = append(out.Searches, s), s
		}
	case len(req.LatencyAt) > 0:
		req.progress("%s latency of %d-byte frames at %d loads\n", which, frame, len(req.LatencyAt))
		var reps []*report.Report
		reps, err = b.LatencyAt(ctx, frame, req.LatencyAt)
		for _, rep := range reps {
			out.Reports = append(out.Reports, rep)
			if werr := req.record(rep); werr != nil {
				return werr
			}
		}
	default:
		switch {
		case req.Traffic.TCP != nil && req.Repeat > 1:
			req.progress("%s %d TCP flow(s)\n", which, req.Traffic.TCP.Flows)
		case sweep || req.Repeat > 1:
			req.progress("%s frame %d bytes\n", which, frame)
		}
		var rep *report.Report
		rep, err = b.Run(ctx, frame)
		if rep != nil {
			out.Reports, result = append(out.Reports, rep), rep
		}
	}
	if result != nil {
		if werr := req.record(result); werr != nil {
			return werr
		}
	}
	return err
}

// eachTogether measures the streams together at every frame size in turn.
func (req Request) eachTogether(ctx context.Context, g *Group, out *Outcome) error {
	frames := []int{0} // TCP runs alone: no frame size
	if t := firstUDPRun(req.Streams); t != nil {
		frames = t.Frames
	}
	for i, frame := range frames {
		if len(frames) > 1 {
			req.progress("[%d/%d] frame %d bytes, %d runs together\n", i+1, len(frames), frame, len(req.Streams))
		}
		rep, err := g.Run(ctx, frame)
		if rep != nil && len(rep.Streams) > 0 {
			out.Groups = append(out.Groups, rep)
			if werr := req.record(rep); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// firstUDPRun is the first UDP run of ts, nil when all are TCP runs.
func firstUDPRun(ts []*spec.Traffic) *spec.Traffic {
	if i := slices.IndexFunc(ts, func(t *spec.Traffic) bool { return t.TCP == nil }); i >= 0 {
		return ts[i]
	}
	return nil
}

func (req Request) progress(format string, args ...any) {
	if req.Progress != nil {
		fmt.Fprintf(req.Progress, format, args...)
	}
}

// record writes one result as one JSON line in one write, then syncs: a
// crash or kill never loses a completed run or leaves half a line.
func (req Request) record(v any) error {
	if req.Results == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := req.Results.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	return req.Results.Sync()
}

// deployOrReuse deploys the lab, or takes it as it is deployed; it
// reports whether it deployed it.
func deployOrReuse(ctx context.Context, m *lab.Manager, req Request) (bool, error) {
	if !m.Store().Deployed(req.Lab) {
		if err := req.routedByFile(); err != nil {
			return false, err
		}
	}
	_, err := m.Deploy(ctx, req.Lab)
	var ce *lab.ConflictError
	switch {
	case err == nil:
		req.progress("deployed lab %s for this run\n", req.Lab.Name)
		return true, nil
	case errors.As(err, &ce) && ce.AlreadyDeployed:
		if err := matchDeployed(m, req.Lab); err != nil {
			return false, err
		}
		return false, req.undoLeftVariant(ctx, m)
	}
	return false, fmt.Errorf("deploy lab %s: %w", req.Lab.Name, err)
}

// routedByFile refuses, before a lab is deployed for them, runs the file's
// routes take nowhere: a deployed lab is traced by its kernels instead
// (exec lines, daemons and users add routes the file does not have).
func (req Request) routedByFile() error {
	runs := req.Streams
	if len(runs) == 0 {
		runs = []*spec.Traffic{req.Traffic}
	}
	for _, t := range runs {
		if err := walk.TrafficPath(req.Lab, t); err != nil {
			return fmt.Errorf("%w (if exec lines, daemons or you add the route, deploy the lab first: bench then goes by its kernels' routes)", err)
		}
	}
	return nil
}

// undoLeftVariant gives a deployed lab back as deployed when a run that
// was stopped (killed) left one of its variants applied: every run
// measures the lab its flags name.
func (req Request) undoLeftVariant(ctx context.Context, m *lab.Manager) error {
	st, err := m.Recorded(req.Lab.Name)
	if err != nil || st.Variant == nil {
		return err
	}
	req.progress("lab %s has variant %s applied (a run was stopped before it undid it): giving the lab back as deployed\n", req.Lab.Name, st.Variant.Name)
	return m.ApplyVariant(ctx, req.Lab, spec.BaseVariant)
}

// matchDeployed makes the lab agree with how it is deployed: a lab that
// was deployed without its placement is measured as such, and one deployed
// with it cannot be measured without.
func matchDeployed(m *lab.Manager, l *spec.Lab) error {
	st, err := m.Recorded(l.Name)
	if err != nil {
		return err
	}
	switch {
	case st.Unplaced != "" && l.Unplaced == "":
		l.Unplace(st.Unplaced + " (as deployed)")
	case st.Unplaced == "" && l.Unplaced != "" && len(st.Placement) > 0:
		return fmt.Errorf("lab %s is deployed with its CPU placement, so it cannot be measured without (%s): destroy it first", l.Name, l.Unplaced)
	}
	return nil
}

// settlePlacement checks that this machine can give the run its CPUs, and
// takes the placement out where the mode says so.
func settlePlacement(req *Request) error {
	l, runs := req.Lab, req.runs()
	switch req.Placement {
	case "off":
		placed := l.Placed()
		for _, t := range runs {
			placed = placed || len(t.CPUs) > 0
			t.CPUs = nil
		}
		if placed {
			l.Unplace("placement off")
		}
		return nil
	case "", "on", "auto":
	default:
		return &FieldError{"placement", fmt.Errorf("%q: use on, auto or off", req.Placement)}
	}
	for _, t := range runs {
		if !l.Placed() && len(t.CPUs) == 0 {
			continue
		}
		why, err := placementMissing(l, t, caps.Or(req.Caps))
		if err != nil {
			return err
		}
		if why == "" {
			continue
		}
		if req.Placement != "auto" {
			return &FieldError{"placement", fmt.Errorf("the lab's CPU placement cannot apply here: %s (auto runs without it and says so)", why)}
		}
		l.Unplace(why)
		for _, t := range runs {
			if len(t.CPUs) > 0 {
				t.Threads, t.CPUs = len(t.CPUs), nil
			}
		}
		return nil
	}
	return nil
}

// runs are the request's traffic runs: its streams, or its one run.
func (req Request) runs() []*spec.Traffic {
	if len(req.Streams) > 0 {
		return req.Streams
	}
	return []*spec.Traffic{req.Traffic}
}

// placementMissing says why this machine cannot give the lab and the run
// the CPUs they name, from what it has: "" when it can.
func placementMissing(l *spec.Lab, t *spec.Traffic, c caps.Capabilities) (string, error) {
	online, err := host.Machine{}.OnlineCPUs()
	if err != nil {
		return "", err
	}
	allowed, err := host.AllowedCPUs()
	if err != nil {
		return "", err
	}
	if c.Rootless && l.NodesPlaced() {
		return rootless.Unplaced, nil
	}
	var named spec.CPUSet
	for _, n := range l.Nodes {
		named = append(named, n.CPUs...)
	}
	for _, v := range l.Variants {
		for _, n := range v.Lab.Nodes {
			named = append(named, n.CPUs...)
		}
	}
	named = append(named, t.CPUs...)
	for _, c := range named {
		if !online.Contains(c) {
			return fmt.Sprintf("the lab places work on cpu%d, but this machine has %d CPU(s) online (%s), so the sender and the nodes it drives would share them", c, len(online), online), nil
		}
	}
	for _, c := range t.CPUs {
		if !allowed.Contains(c) {
			return fmt.Sprintf("the sender is placed on cpu%d, but this process may only run on cpu %s (taskset or cgroup)", c, allowed), nil
		}
	}
	return "", nil
}
