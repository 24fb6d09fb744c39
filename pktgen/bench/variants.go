package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench/compare"
	"github.com/nslab/nslab/pktgen/bench/search"
	"github.com/nslab/nslab/pktgen/stats"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// Defaults of a comparison of variants (bench --variants).
const (
	// DefaultMargin is what "no change" means when --margin does not
	// say: 2% in a duet, 3% in sequential pairs. Measured on our 2-vCPU
	// machines (docs/benchmarking.md), one pair of 1 s trials of the
	// router's cost per packet spreads about 0.4-1.3% in a duet and 4-5%
	// in sequence, and the pairs resolve about 0.5-1% and 3% with 90%
	// power: a margin about twice what the pairs resolve lets "no change"
	// be said in most comparisons of a variant with itself.
	DefaultMargin, DefaultSequentialMargin = 0.02, 0.03
	// DefaultMaxTime is the time a comparison may take per variant
	// compared with the first, when --max-time does not say.
	DefaultMaxTime = 2 * time.Minute
	// VariantAlpha is the chance of calling a change that is not there,
	// over all the looks of a comparison: 1%, so that of 20 comparisons
	// of a variant with itself, two call a change less than 2% of the
	// time (at 5% it would be 26%). The duet's narrow spread makes the
	// pairs this costs few.
	VariantAlpha = 0.01
	// VariantPower is the power the minimum detectable effect is given
	// for.
	VariantPower = 0.9
)

// DefaultLooks are the pair counts a comparison looks at, when --repeat
// does not say: a large change stops it at 10 pairs, a small one gets 40.
var DefaultLooks = []int{10, 20, 40}

// plan is the sequential plan of a variant comparison: --repeat N looks
// at a quarter, half and all of N pairs (those of 6 or more), and at N.
func (req Request) plan() stats.Plan {
	looks := DefaultLooks
	if n := req.Repeat; n > 1 {
		looks = nil
		for _, l := range []int{n / 4, n / 2, n} {
			if l >= 6 && (len(looks) == 0 || l > looks[len(looks)-1]) {
				looks = append(looks, l)
			}
		}
		if len(looks) == 0 {
			looks = []int{n}
		}
	}
	margin := req.Margin
	if margin == 0 && req.Traffic != nil {
		margin = req.Traffic.Margin // the run's margin: key; --margin sets req.Margin
	}
	switch {
	case margin > 0:
	case req.Duet:
		margin = DefaultMargin
	default:
		margin = DefaultSequentialMargin
	}
	return stats.Plan{Looks: looks, Alpha: VariantAlpha, Margin: margin, Power: VariantPower}
}

// maxTime is how long a comparison of variants may measure.
func (req Request) maxTime() time.Duration {
	if req.MaxTime > 0 {
		return req.MaxTime
	}
	return DefaultMaxTime * time.Duration(len(req.Variants)-1)
}

// eachVariant measures (or searches) the run under each variant in
// blocks: one trial of every variant back to back, in a random order
// each block, applying each variant before its turn. Trials of one block
// are pairs, so the machine's drift between blocks cancels. At each look
// of the plan every variant after the first is compared with the first,
// pair by pair, and it stops when every comparison has decided, at the
// plan's last look, or before a block would overrun the time allowed. It
// gives the lab back as deployed at the end, an error or not.
func (req Request) eachVariant(ctx context.Context, m *lab.Manager, r *lab.Running, out *Outcome) (err error) {
	if req.Duet {
		return req.eachVariantDuet(ctx, m, r, out)
	}
	defer func() {
		if uerr := m.ApplyVariant(context.WithoutCancel(ctx), req.Lab, spec.BaseVariant); uerr != nil {
			err = errors.Join(err, fmt.Errorf("give the lab back as deployed: %w", uerr))
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	return req.inBlocks(out, func(run string, n int, files map[string]*report.ResultsFile) error {
		for _, i := range rng.Perm(len(req.Variants)) {
			name := req.Variants[i]
			req.progress("block %d (pairs so far %d), variant %s: ", n, n-1, name)
			if err := m.ApplyVariant(ctx, req.Lab, name); err != nil {
				return err
			}
			if err := req.underVariant(ctx, r, name, fmt.Sprintf("%s/%d", run, n), files[name], out); err != nil {
				return err
			}
		}
		return nil
	})
}

// inBlocks measures block after block (measure adds block n's results of
// run to each variant's file) and looks at the plan's pair counts: it
// stops when every comparison has decided, at the plan's last look, or
// before a block would overrun the time allowed.
func (req Request) inBlocks(out *Outcome, measure func(run string, n int, files map[string]*report.ResultsFile) error) error {
	files := map[string]*report.ResultsFile{}
	for _, name := range req.Variants {
		files[name] = report.NewResultsFile("variant "+name, true)
	}
	plan, run := req.plan(), runID()
	deadline := time.Now().Add(req.maxTime())
	for n := 1; ; n++ {
		began := time.Now()
		if err := measure(run, n, files); err != nil {
			return err
		}
		last := n >= plan.Looks[len(plan.Looks)-1] || time.Now().Add(time.Since(began)).After(deadline)
		if !last && !slices.Contains(plan.Looks, n) {
			continue
		}
		decided, err := req.compareVariants(files, plan, last, out)
		if err != nil {
			return err
		}
		if decided || last {
			break
		}
	}
	out.Summaries = report.Summaries(&out.Results, report.SummaryLevel)
	return nil
}

// compareVariants compares every variant after the first with the
// first, and decides each on the run's main figure; it says whether
// every one has decided.
func (req Request) compareVariants(files map[string]*report.ResultsFile, plan stats.Plan, last bool, out *Outcome) (bool, error) {
	out.Comparisons = nil
	decided := true
	for _, name := range req.Variants[1:] {
		c, err := report.Compare(files[req.Variants[0]], files[name], true)
		if err != nil {
			return false, fmt.Errorf("compare variant %s with %s: %w", name, req.Variants[0], err)
		}
		c.Ignored = nil // the same lab, kernel, engine and nslab; a placement that differs is the variant's own change
		key, why, err := req.decisionFigure(files[name], compare.RoutersPlaced(out.Reports))
		if err != nil {
			return false, err
		}
		outcome, err := c.Decide(key, plan, last)
		if err != nil {
			return false, err
		}
		outcome = req.judge(c.Decision, why, out.Reports, outcome)
		req.progress("%s against %s after %d pairs: %s\n", name, req.Variants[0], c.Decision.Pairs, c.Decision.Decision)
		decided = decided && outcome != stats.MeasureMore
		out.Comparisons = append(out.Comparisons, c)
	}
	return decided, nil
}

// decisionFigure is the figure a comparison decides on: --figure, or
// the most sensitive the run has. Measured on our machines (docs/
// benchmarking.md): the router's cost per packet at a load it holds
// moves with the CPU's speed (8% between 1 s trials), its ratio to the
// receiver's cost on the same CPU in the same trial (the relative cost)
// far less (2%); the rate forwarded at overload spreads 16% a pair, a
// searched NDR or PDR more. So the relative cost where the traffic has a
// fixed rate, the routers are placed on CPUs of their own (placed), and
// no variant changes the receiver (it is the yardstick); else the cost
// per packet, else the rate received, or a search's first goal. Where
// nothing is placed, the routers' and the receiver's work share the
// senders' CPU, and there the relative cost spread more than the cost
// in ns (5.7-6.1% a pair against 3.7-4.0%, the NAT example's duet).
func (req Request) decisionFigure(rf *report.ResultsFile, placed bool) (report.FigureKey, string, error) {
	frame := req.Traffic.Frames[0]
	if req.Traffic.TCP != nil {
		frame = 0 // a TCP run has no frame size
	}
	var names []string
	for k := range rf.Figures {
		if k.Frame == frame {
			names = append(names, k.Figure)
		}
	}
	want := []string{req.Figure}
	if req.Figure == "" && req.Traffic.TCP != nil {
		want = []string{"goodput_mbps"} // a TCP run: what the flows delivered (figure loaded_latency_p99_ns for latency under load)
	} else if req.Figure == "" {
		want = []string{"router_relative_cost", "router_ns_per_packet", "pps", "throughput_pps"}
		if !placed || req.changesReceiver() {
			want = want[1:]
		}
		if t := req.Traffic; t.RatePPS == 0 && t.RateMbps == 0 {
			want = []string{"pps", "throughput_pps"} // as fast as it goes: the cost per packet of an overloaded router is not the router's alone
		}
		if req.MLR != nil {
			goals := req.MLR.Goals
			if len(goals) == 0 {
				goals = search.DefaultGoals
			}
			want = []string{goals[0].Name + " conditional_throughput_pps"}
		}
	}
	for _, w := range want {
		for k := range rf.Figures {
			if k.Frame == frame && k.Figure == w {
				return k, req.figureReason(w, placed), nil
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return report.FigureKey{}, "", &FieldError{"figure", fmt.Errorf("the runs have no figure %s at %d bytes (they have: %s)", strings.Join(want, " or "), frame, strings.Join(names, ", "))}
}

// figureReason says why figure was the one decided on.
func (req Request) figureReason(figure string, placed bool) string {
	t := req.Traffic
	switch {
	case req.Figure != "":
		return figure + ": asked for"
	case t.TCP != nil:
		return figure + ": a TCP run's figure is what its flows delivered"
	case req.MLR != nil:
		return figure + ": the search's first goal"
	case t.RatePPS == 0 && t.RateMbps == 0:
		return figure + ": the traffic has no rate, so the routers are overloaded and their cost per packet is not theirs alone (it holds the drops'); the rate received is what they forward"
	case figure == "router_relative_cost":
		return figure + ": the traffic has a fixed rate and the routers are placed on CPUs of their own, so their cost per packet over the receiver's on the same CPU in the same trial cancels the CPU's speed, which drifts from one second to the next"
	case figure == "router_ns_per_packet" && !placed:
		return figure + ": the traffic has a fixed rate; the routers are not placed on CPUs of their own, so the receiver's cost on their CPU is no yardstick, and their CPU time per packet (BPF) is the figure"
	case figure == "router_ns_per_packet":
		return figure + ": the traffic has a fixed rate; a variant changes the receiver, so its cost is no yardstick, and the routers' CPU time per packet (BPF) is the figure"
	}
	return figure + ": the first of the run's figures that a comparison can decide on (the routers' cost was not measured)"
}

// judge completes decision d with its set-up, why its figure was chosen
// and whether that figure can move there, and turns it into "cannot tell"
// where it cannot, or where it says "no change" with no positive control
// that moved in this set-up. It returns the outcome that stands.
func (req Request) judge(d *report.Decision, why string, reps []*report.Report, outcome string) string {
	s := req.setupOf(d.Figure, reps)
	v := compare.Judge(s)
	d.Setup, d.FigureReason, d.Validity = s.Words(), why, v.Why
	if req.replaced != "" {
		d.Setup += " (" + req.replaced + ")"
	}
	switch {
	case !v.Valid:
		d.CannotTellWith(v.Why)
		return stats.CannotTell
	case outcome != stats.Same || req.controlName != "":
		return outcome // the control itself: its "same" is that it saw nothing
	}
	ctl := req.control
	if ctl == nil {
		ctl = compare.FindControl(req.controlKey(d.Figure))
	}
	switch {
	case ctl != nil && ctl.Seen && ctl.Figure == d.Figure:
		d.Control = ctl
		return outcome
	case ctl != nil:
		d.Control = ctl
		d.CannotTellWith(fmt.Sprintf("%s did not move for a known cost in this set-up (positive control: %s), so no change here is no evidence", d.Figure, ctl.Sentence))
	default:
		d.CannotTellWith(fmt.Sprintf("no positive control has shown that %s moves in this set-up (%s) on this machine: measure one with a sensitivity check (check-sensitivity; alone, or with these variants)", d.Figure, d.Setup))
	}
	return stats.CannotTell
}

// setupOf is the set-up of this request's comparison on figure, with
// what reps measured.
func (req Request) setupOf(figure string, reps []*report.Report) compare.Setup {
	t := req.Traffic
	s := compare.Setup{Duet: req.Duet, FullLoad: t.RatePPS == 0 && t.RateMbps == 0, Figure: figure, RouterCPUs: compare.PlacedCPUs(req.Lab)}
	if req.Duet {
		s.TwinCPUs = s.RouterCPUs // compare.TwinOf keeps the lab's placement
	}
	switch {
	case t.RatePPS > 0:
		s.Rate = fmt.Sprintf("%d pps", t.RatePPS)
	case t.RateMbps > 0:
		s.Rate = fmt.Sprintf("%d Mbit/s", t.RateMbps)
	}
	lossy := false
	for _, r := range reps {
		s.Measured = true
		lossy = lossy || r.Loss > 0
	}
	s.Lossless = s.Measured && !lossy
	return s
}

// changesReceiver reports whether a variant compared changes the node
// that holds the traffic's destination (its settings, or command lines it
// runs there), or that node is not known: the receiver's cost is then no
// yardstick for the router's.
func (req Request) changesReceiver() bool {
	owner, ok := req.Lab.AddressOwners()[req.Traffic.To]
	if !ok {
		return true
	}
	for _, name := range req.Variants {
		v := req.Lab.Variant(name)
		if v == nil {
			continue
		}
		if slices.Contains(v.Nodes, owner.Node) || v.Before[owner.Node] != nil || v.After[owner.Node] != nil {
			return true
		}
	}
	return false
}

// runID names one comparison's blocks, so that blocks of two runs
// appended to one results file are never taken for pairs.
func runID() string {
	return strconv.FormatUint(rand.Uint64()>>16, 36)
}

// underVariant measures every frame size once under variant name (already
// applied), in block, and adds what finished to its results.
func (req Request) underVariant(ctx context.Context, r *lab.Running, name, block string, rf *report.ResultsFile, out *Outcome) error {
	o := req.Options
	o.Variant, o.Block = name, block
	b, err := New(r.As(req.Lab.Variant(name).Lab), req.Traffic, o)
	if err != nil {
		return fmt.Errorf("variant %s: %w", name, err)
	}
	defer b.Close()
	nr, nm, ns, nf := len(out.Reports), len(out.MLR), len(out.Searches), len(out.RFC2544)
	for i, frame := range req.Traffic.Frames {
		if err := req.one(ctx, b, frame, fmt.Sprintf("[%d/%d]", i+1, len(req.Traffic.Frames)), len(req.Traffic.Frames) > 1, out); err != nil {
			return err
		}
	}
	results := append(anys(out.Reports[nr:]), anys(out.MLR[nm:])...)
	results = append(append(results, anys(out.Searches[ns:])...), anys(out.RFC2544[nf:])...)
	for _, x := range results {
		line, err := json.Marshal(x)
		if err != nil {
			return err
		}
		if err := rf.AddLine(line); err != nil {
			return fmt.Errorf("variant %s: %w", name, err)
		}
	}
	return nil
}

// checkVariants refuses, before anything changes, variants the file does
// not have, and a variant run of several streams.
func (req Request) checkVariants() error {
	if len(req.Variants) == 0 {
		if req.Duet && !req.DuetAuto && !req.CheckSensitivity {
			return &FieldError{"duet", errors.New("a duet compares variants: name two or more (variants)")}
		}
		return nil
	}
	if len(req.Streams) > 1 {
		return &FieldError{"variants", fmt.Errorf("variants take one traffic run; %d were named", len(req.Streams))}
	}
	if len(req.Variants) < 2 {
		return &FieldError{"variants", fmt.Errorf("%s: name two or more to compare them (%s is the lab as deployed)", req.Variants[0], spec.BaseVariant)}
	}
	seen := map[string]bool{}
	for _, v := range req.Variants {
		if req.Lab.Variant(v) == nil {
			return &FieldError{"variants", fmt.Errorf("lab %s has no variant %q (its variants: %s, and %s, the lab as deployed)", req.Lab.Name, v, compare.JoinOr(req.Lab.VariantNames(), "none"), spec.BaseVariant)}
		}
		if seen[v] {
			return &FieldError{"variants", fmt.Errorf("%s is named twice", v)}
		}
		seen[v] = true
		if err := lab.CheckVariantKernel(req.Lab.Variant(v)); err != nil {
			return &FieldError{"variants", err}
		}
		if err := ccOverridden(req.Traffic, req.Lab.Variant(v)); err != nil {
			return &FieldError{"variants", err}
		}
	}
	return nil
}

// ccSysctl is a namespace's default congestion control.
const ccSysctl = "net.ipv4.tcp_congestion_control"

// ccOverridden refuses a variant that sets the sender node's default
// congestion control for a TCP run that names its own (tcp: {cc: ...}):
// the run sets it on every socket, so the variant would change nothing.
func ccOverridden(t *spec.Traffic, v *spec.Variant) error {
	if t == nil || t.TCP == nil || t.TCP.CC == "" || !slices.Contains(v.Nodes, t.From.Node) {
		return nil
	}
	for _, s := range v.Lab.Node(t.From.Node).Sysctls {
		if s.Key == ccSysctl {
			return fmt.Errorf("variant %s sets %s on %s, but run %s names its congestion control (tcp: {cc: %s}), which every socket of the run takes: remove cc: from the run to compare the variants' defaults",
				v.Name, ccSysctl, t.From.Node, t.Name, t.TCP.CC)
		}
	}
	return nil
}

// anys is xs as values of any.
func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
