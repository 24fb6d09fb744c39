package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"github.com/nslab/nslab/topology/fleet"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/auto"
	"github.com/nslab/nslab/pktgen/bench/compare"
	"github.com/nslab/nslab/pktgen/bench/events"
	"github.com/nslab/nslab/pktgen/bench/search"

	"github.com/nslab/nslab/internal/units"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// benchOptions is nslab bench: the checked request (lab, runs, searches,
// variants) and what the command does around it: print the pktgen script
// instead, append each result to a results file, draw a plot, and the
// format of the report.
type benchOptions struct {
	Request     bench.Request
	Manager     *lab.Manager
	DryRun      bool
	ResultsFile string // --out; "": none
	Plot        string // --plot FILE; "": none
	Format      string
	Details     bool // the table's long forms (bench --details)
	// Live is --live: where the live stream goes besides the lab's live
	// file ("": nowhere else, "-": stdout, and the report to ErrOut).
	Live     string
	Quiet    bool // -q: no live lines, no status line
	Out      io.Writer
	ErrOut   io.Writer
	Baseline baselineOptions
}

func benchCommand(run func(context.Context, *benchOptions) error) *cli.Command {
	flags := append([]cli.Flag{
		hostFlag(),
		topoFlag(),
		prefixFlag(),
		asDeployedFlag(),
		&cli.StringSliceFlag{Name: "traffic", Usage: "traffic run or group `NAME` (default: the first run); several (--traffic ab --traffic ba) run together"},
		&cli.DurationFlag{Name: "duration", Usage: "override the run's duration", DefaultText: "the run's duration: in the file, 10s for a run given by --from and --to"},
		&cli.Uint64Flag{Name: "count", Usage: "override the run's packet count", DefaultText: "the run's count in the file, else none"},
		&cli.IntSliceFlag{Name: "frame", Usage: "override the frame size(s), bytes with FCS", DefaultText: "the run's frames in the file, else 64"},
		&cli.StringFlag{Name: "engine", Usage: "auto, pktgen, userspace or xdp"},
		&cli.IntFlag{Name: "tcp", Usage: "send `N` TCP flows (as the run's tcp: {flows: N}) instead of UDP frames: goodput, retransmissions set against the path's drops, RTT and cwnd from TCP_INFO of both ends"},
		&cli.StringFlag{Name: "from", Usage: "sender `NODE:IF` (a run without a traffic: section)"},
		&cli.StringFlag{Name: "to", Usage: "destination `ADDRESS` (with --from)"},
		&cli.StringFlag{Name: "rate", Usage: "max, or e.g. 200kpps, 500Mbit", DefaultText: "the run's rate in the file, else max"},
		&cli.IntFlag{Name: "threads", Usage: "sending threads"},
		&cli.StringFlag{Name: "cpus", Usage: "pin the sending threads to these `CPUS`, one thread each (e.g. 0 or 0-1)"},
		&cli.StringFlag{Name: "placement", Value: "on", Usage: "the file's CPU placement: on, auto (left out, and said why, where the machine lacks the CPUs) or off; a rootless lab's default is auto"},
		&cli.StringFlag{Name: "measure", Usage: "measure these `NODE:IF,...` instead of the path's interfaces (the last is the receiver)"},
		&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "sampling interval (100ms and up)"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table, json, csv or markdown"},
		&cli.BoolFlag{Name: "details", Usage: "the table's long forms: how each figure was obtained, why the engine was chosen, softnet_stat's table and the machine's settings (the default keeps every line within 120 characters; JSON has everything)"},
		&cli.BoolFlag{Name: "latency", Usage: "read every packet at the receiver: one-way latency (min, percentiles, max, jitter) and loss, duplicates and reordering by sequence number"},
		&cli.UintFlag{Name: "latency-every", Usage: "with --latency: read one packet in `N` (a power of two; 1: every packet, with the accounting by sequence); default: every packet, or about 1000 a second when the lab is placed"},
		&cli.StringFlag{Name: "latency-at", Usage: "measure latency at these `FRACTIONS` of the run's rate, or of its top rate when it has none (a first run as fast as the engine goes), e.g. 10%,50%,90%"},
		&cli.IntFlag{Name: "repeat", Value: 1, Usage: "measure (or search) every frame size `N` times, in interleaved rounds, and give each figure's median, range and confidence interval"},
		&cli.StringFlag{Name: "variants", Usage: "compare these lab `VARIANTS` (the file's variants:, and base, the lab as deployed): blocks of one trial each, back to back in a random order, undone after each turn; each variant after the first is compared with the first pair by pair (signed-rank test) and a decision made (faster, slower, no change beyond --margin where a positive control of the set-up moved (--check-sensitivity), cannot tell where the figure cannot move in the set-up or no control moved, or inconclusive), looking after 10, 20 and 40 pairs (--repeat N: N/4, N/2 and N) and stopping when it has decided; the figure decided on is the router's cost per packet when the traffic has a fixed rate, the rate received otherwise"},
		&cli.BoolFlag{Name: "duet", Value: true, Usage: "with --variants: measure the first variant and each other at the same time, one in the lab and one in a twin of it deployed for the run (which holds which drawn at random per block), so that what the machine does to the CPUs meanwhile cancels in each pair (the default where the lab can be twinned; --duet=false: sequential pairs)"},
		&cli.StringFlag{Name: "margin", Usage: "with --variants: what no change means: none larger than this `PERCENT` (default 2% in a duet, 3% in sequential pairs)"},
		&cli.DurationFlag{Name: "max-time", Usage: "with --variants: measure for at most this long (default 2m per variant compared with the first), then decide or say how many more pairs would"},
		&cli.BoolFlag{Name: "check-sensitivity", Usage: "measure a positive control first: the first variant (or the lab as deployed) against itself with --control-rules firewall rules that match nothing added to every node that forwards, in the set-up and on the figure the comparison uses; it says whether that set-up sees a known cost, and is saved for a day (this machine, lab file and traffic): a comparison says \"no change\" only where such a control moved, \"cannot tell\" otherwise"},
		&cli.IntFlag{Name: "control-rules", Value: compare.DefaultControlRules, Usage: "with --check-sensitivity: the known cost, in firewall rules that match nothing (`N`; about 56 ns a packet each on our machines)"},
		&cli.StringFlag{Name: "figure", Usage: "with --variants: decide on this `FIGURE` (router_relative_cost, router_ns_per_packet, pps, loss_pct, latency_p50_ns, throughput_pps, \"NDR conditional_throughput_pps\", ...)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep a lab that bench deployed"},
		&cli.DurationFlag{Name: "wait", Value: bench.DefaultRoutingWait, Usage: "in a lab whose nodes run routing daemons: wait up to `DURATION` for them to converge (as check --wait: every pair answering as the kernels' routes say, the tables unchanged for 2s)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no live lines"},
		&cli.StringFlag{Name: "live", Usage: "write a JSON line per sampling interval (every hop's rates and drops, every CPU's use and softnet) and the bench's start and end to `FILE`, or to stdout with - (the report then goes to stderr, after the live lines)"},
		&cli.StringFlag{Name: "out", Usage: "append each completed run to `FILE` as a JSON line, synced at once"},
		&cli.StringFlag{Name: "plot", Usage: "draw the sweep or search into `FILE`.png or .svg (with the nslab-plot helper)"},
		&cli.BoolFlag{Name: "search", Usage: "find NDR and PDR per frame size by MLRsearch (" + search.Draft + "): each goal's bounds and conditional throughput"},
		&cli.StringSliceFlag{Name: "goal", Usage: "with --search: a goal instead of NDR and PDR, e.g. name=PDR,loss=0.5%,exceed=50%,final=1s,sum=7s,width=2%,initial=250ms (repeat for several)"},
		&cli.BoolFlag{Name: "rfc2544", Usage: "RFC 2544's four benchmarks per frame size: throughput (by MLRsearch, its NDR; --goal sets the goals), latency at the throughput, the frame loss rate from the top rate down in 10% steps, and back-to-back frames (RFC 9004)"},
		&cli.IntFlag{Name: "b2b-trials", Value: 5, Usage: "with --rfc2544: how many times the back-to-back search runs (RFC 9004 asks for 50)"},
		&cli.BoolFlag{Name: "search-binary", Usage: "the older search: binary search over the rate with single trials (RFC 2544), kept as a baseline"},
		&cli.StringFlag{Name: "loss", Value: "0", Usage: "with --search-binary: the highest acceptable loss, e.g. 0.5%"},
		&cli.DurationFlag{Name: "trial", Value: 2 * time.Second, Usage: "with --search-binary: length of each trial"},
		&cli.IntFlag{Name: "confirm", Value: 1, Usage: "with --search-binary: trials in a row the rate found must pass"},
		&cli.StringSliceFlag{Name: "event", Usage: "change the lab while the traffic runs, and measure the outage: `TIME:down|up:NODE:IF`, TIME:impair:NODE:IF:loss=5%,delay=10ms, TIME:clear:NODE:IF, TIME:stop|start:NODE (as nslab node) or TIME:apply:FILE (as nslab apply), TIME from the start of sending (repeat for several; reads every packet at the receiver, for the longest sequence gap)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the equivalent kernel pktgen shell script (destination MAC resolved) and change nothing"},
		&cli.BoolFlag{Name: otherHostsFlag, Hidden: true, Usage: "read the path's hops on other hosts through the agent that runs this bench"},
	}, baselineFlags()...)
	return command("bench", "run a traffic run of the file through the lab and report pps, Mbps, loss hop by hop and what limited it", "[FILE]", flags, func(c *cli.Context) (*benchOptions, error) {
		req, err := benchRequest(c)
		var bo baselineOptions
		if err == nil {
			bo, err = readBaselineOptions(c, &req.Repeat)
		}
		if err == nil && !c.IsSet("margin") && req.Traffic != nil && req.Traffic.Margin > 0 {
			bo.Margin = 100 * req.Traffic.Margin // the run's margin: key, as --margin would give it
		}
		return &benchOptions{Request: req, Manager: manager(c), DryRun: c.Bool("dry-run"), ResultsFile: c.String("out"),
			Plot: c.String("plot"), Format: c.String("format"), Details: c.Bool("details"), Live: c.String("live"), Quiet: c.Bool("quiet"), Out: screen(c), ErrOut: c.App.ErrWriter, Baseline: bo}, err
	}, run, runBench)
}

// runBench is one library call and its output. Everything was checked
// before anything is deployed.
func runBench(ctx context.Context, o *benchOptions) error {
	req := o.Request
	if o.DryRun {
		return benchDryRun(o)
	}
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	plotter, err := plotHelper(o.Plot)
	if err != nil {
		return err
	}
	if p := o.ResultsFile; p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("results file: %w", err)
		}
		defer f.Close()
		req.Results = f
	}
	if err := o.Baseline.pairWith(&req); err != nil {
		return err
	}
	var kept bytes.Buffer // the run's results, for a baseline
	req.Results = o.Baseline.tee(req.Results, &kept)
	live, err := openLive(o.Manager, req.Lab.Name, o.Live, o.Out)
	if err != nil {
		return err
	}
	req.Stream = live.send
	live.start(req)
	status := showStatus(o, &req)
	defer status.Stop()
	out, err := bench.Sweep(ctx, o.Manager, req)
	status.Stop() // before the output
	live.end(out, err)
	if lerr := live.Close(); lerr != nil && err == nil {
		err = lerr
	}
	if o.Live == "-" {
		o.Out = o.ErrOut // stdout is the stream's alone
	}
	var verdict *report.BaselineVerdict
	var history *report.History
	if err == nil && out != nil {
		verdict, history, err = o.Baseline.after(o.ErrOut, out, kept.Bytes(), req.Lab)
	}
	if werr := writeOutcome(o, out, verdict, history); werr != nil && err == nil {
		err = werr
	}
	if err == nil && plotter != "" {
		err = runPlot(plotter, o.Plot, out)
	}
	if err == nil {
		err = verdictExit(verdict)
	}
	return err
}

// showStatus puts up a status line on the terminal for a run that lasts
// minutes (a search, RFC 2544, variants, repeats, latency at several
// loads), through which the run's other lines on stderr go; it is off for
// a single run, whose live lines say enough, and with -q.
func showStatus(o *benchOptions, req *bench.Request) *statusLine {
	what := longRun(req)
	s := newStatusLine(o.ErrOut, o.Quiet || what == "", what)
	req.Status = s.Func()
	if req.Progress != nil {
		req.Progress = s.Writer(req.Progress)
	}
	if req.Live != nil {
		req.Live = s.Writer(req.Live)
	}
	return s
}

// longRun names a request that runs many measured runs, or is "".
func longRun(req *bench.Request) string {
	switch {
	case req.RFC2544 != nil:
		return "RFC 2544"
	case req.MLR != nil:
		return "MLRsearch"
	case req.Search != nil:
		return "throughput search"
	case len(req.Variants) > 0:
		return "variants " + strings.Join(req.Variants, ", ")
	case req.Repeat > 1:
		return fmt.Sprintf("%d repeats", req.Repeat)
	case len(req.LatencyAt) > 1:
		return fmt.Sprintf("latency at %d loads", len(req.LatencyAt))
	}
	return ""
}

// benchRequest turns the flags into a checked request.
func benchRequest(c *cli.Context) (bench.Request, error) {
	given, err := readPart(c)
	if err != nil {
		return bench.Request{}, err
	}
	l, err := deployedLab(c, manager(c), given)
	if err != nil {
		return bench.Request{}, err
	}
	if c.Duration("interval") < 100*time.Millisecond {
		return bench.Request{}, cli.Exit("--interval: at least 100ms", 2)
	}
	if err := report.CheckFormat(c.String("format")); err != nil {
		return bench.Request{}, cli.Exit(err.Error(), 2)
	}
	ts, err := bench.Streams(l.Model(), c.StringSlice("traffic"), bench.Selection{From: c.String("from"), To: c.String("to"),
		Duration: c.Duration("duration"), Count: c.Uint64("count"), Frames: c.IntSlice("frame"), Rate: c.String("rate"),
		Threads: c.Int("threads"), CPUs: c.String("cpus"), Engine: c.String("engine")})
	if err != nil {
		return bench.Request{}, err
	}
	if err := tcpFlag(c, ts); err != nil {
		return bench.Request{}, err
	}
	here := capabilities() // every part of the run takes this value
	req := bench.Request{Lab: l, Traffic: ts[0], Placement: placementMode(c), Keep: c.Bool("keep"), Wait: c.Duration("wait"), Progress: folded(c, c.App.ErrWriter),
		Options: bench.Options{Interval: c.Duration("interval"), Compact: termWidth(os.Stderr) < 100, Version: version, AsDeployed: l.SHA256 != given.SHA256, Latency: c.Bool("latency"), LatencyEvery: uint32(c.Uint("latency-every")),
			Caps: &here, Chooser: auto.Chooser{Caps: &here}}}
	if len(ts) > 1 {
		req.Streams = ts
		for _, f := range []string{"search", "search-binary", "measure", "plot"} {
			if c.IsSet(f) {
				return req, cli.Exit(fmt.Sprintf("--%s takes one traffic run; %d runs were named", f, len(ts)), 2)
			}
		}
	}
	if !c.Bool("quiet") {
		req.Live = c.App.ErrWriter
	}
	if c.Bool(otherHostsFlag) {
		req.Remote = remote.NewPipe(os.NewFile(fleet.AskFD, "asks"), os.NewFile(fleet.AnswerFD, "answers"))
	}
	if v := c.String("measure"); v != "" {
		if req.Measure, err = spec.ParseInterfaces(v); err != nil {
			return req, cli.Exit("--measure: "+err.Error(), 2)
		}
	}
	if err := searchRequest(c, &req); err != nil {
		return req, err
	}
	if err := rfc2544Request(c, &req); err != nil {
		return req, err
	}
	if err := eventsRequest(c, &req); err != nil {
		return req, err
	}
	return req, variantsRequest(c, &req)
}

// tcpFlag makes the chosen runs TCP flows when --tcp N is given: N
// connections each, for the run's duration.
func tcpFlag(c *cli.Context, ts []*spec.Traffic) error {
	if !c.IsSet("tcp") {
		return nil
	}
	n := c.Int("tcp")
	if n < 1 || n > spec.MaxTCPFlows {
		return cli.Exit(fmt.Sprintf("--tcp %d: give 1 to %d flows", n, spec.MaxTCPFlows), 2)
	}
	for _, f := range []string{"count", "frame", "engine", "rate", "threads", "cpus"} {
		if c.IsSet(f) {
			return cli.Exit(fmt.Sprintf("--%s is for UDP frames; --tcp sends TCP flows: remove one of them", f), 2)
		}
	}
	for i, t := range ts {
		if t.Duration <= 0 {
			return cli.Exit(fmt.Sprintf("--tcp: traffic run %s has no duration (TCP flows write for a time): give --duration", t.Name), 2)
		}
		tcp := *t
		cc := ""
		if t.TCP != nil {
			cc = t.TCP.CC
		}
		tcp.TCP = &spec.TCP{Flows: n, CC: cc}
		ts[i] = &tcp
	}
	return nil
}

// variantsRequest reads --variants and the flags of its comparison into
// req.
func variantsRequest(c *cli.Context, req *bench.Request) error {
	v := c.String("variants")
	req.CheckSensitivity, req.ControlRules = c.Bool("check-sensitivity"), c.Int("control-rules")
	if c.IsSet("control-rules") && (!req.CheckSensitivity || req.ControlRules < 1) {
		return cli.Exit(fmt.Sprintf("--control-rules %d: a count of 1 or more, with --check-sensitivity", req.ControlRules), 2)
	}
	if v == "" && req.CheckSensitivity {
		req.Repeat, req.MaxTime, req.Figure = 0, c.Duration("max-time"), c.String("figure")
		req.Duet, req.DuetAuto = c.Bool("duet"), !c.IsSet("duet")
		return nil
	}
	if v == "" {
		for _, f := range []string{"margin", "max-time", "figure", "duet"} { // duet: only when set
			if c.IsSet(f) {
				return cli.Exit(fmt.Sprintf("--%s goes with --variants: name the variants to compare", f), 2)
			}
		}
		return nil
	}
	req.Variants = strings.Split(v, ",")
	req.Repeat = 0 // bench.DefaultLooks
	if c.IsSet("repeat") {
		if req.Repeat = c.Int("repeat"); req.Repeat < 6 {
			return cli.Exit(fmt.Sprintf("--repeat %d with --variants: at least 6 pairs (with fewer the signed-rank test cannot reach p < 0.05)", req.Repeat), 2)
		}
	}
	if c.IsSet("margin") {
		m, err := parsePercent(c.String("margin"))
		if err != nil || m <= 0 {
			return cli.Exit(fmt.Sprintf("--margin %s: a percentage above 0, such as 1%%", c.String("margin")), 2)
		}
		req.Margin = m
	}
	req.MaxTime, req.Figure = c.Duration("max-time"), c.String("figure")
	req.Duet, req.DuetAuto = c.Bool("duet"), !c.IsSet("duet")
	return nil
}

// benchDryRun prints the run's pktgen script, with the MAC from the kernel
// when the lab is deployed here.
func benchDryRun(o *benchOptions) error {
	req, w := o.Request, o.Out
	var r *lab.Running
	if lab.CheckPrivileges() == nil {
		if run, err := o.Manager.Open(req.Lab); err == nil {
			defer run.Close()
			r = run
		}
	}
	for i, t := range req.Streams {
		if i == 0 {
			fmt.Fprintf(w, "# %d runs, started together (one script each, run at the same time):\n", len(req.Streams))
		}
		script, err := bench.DryRun(req.Lab, r, t)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n# --- run %s ---\n%s", t.Name, script)
	}
	if len(req.Streams) > 0 {
		return nil
	}
	script, err := bench.DryRun(req.Lab, r, req.Traffic)
	if err != nil {
		return err
	}
	if _, err = fmt.Fprint(w, script); err != nil {
		return err
	}
	return variantsDryRun(w, req)
}

// variantsDryRun prints, for --variants, the steps that apply each
// variant and undo it.
func variantsDryRun(w io.Writer, req bench.Request) error {
	for _, name := range req.Variants {
		apply, undo, err := lab.VariantPlan(req.Lab, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n# --- variant %s: before each of its rounds (%d steps) ---\n", name, len(apply))
		for _, s := range apply {
			fmt.Fprintf(w, "# %s\n%s\n", s.Name, strings.Join(s.Shell(), "\n"))
		}
		fmt.Fprintf(w, "# --- variant %s: after each of its rounds, undone (%d steps) ---\n", name, len(undo))
		for _, s := range undo {
			fmt.Fprintf(w, "# %s\n%s\n", s.Name, strings.Join(s.Shell(), "\n"))
		}
	}
	return nil
}

// writeOutcome prints what finished in the chosen format, through the
// report package's one writer.
func writeOutcome(o *benchOptions, out *bench.Outcome, v *report.BaselineVerdict, h *report.History) error {
	if out == nil {
		return nil
	}
	for _, r := range out.Reports {
		r.Details, r.DetailsHint = o.Details, "--details says why"
	}
	for _, g := range out.Groups {
		for _, r := range g.Streams {
			r.Details, r.DetailsHint = o.Details, "--details says why"
		}
	}
	for _, c := range out.Comparisons {
		c.Details = o.Details
	}
	return report.WriteOutput(o.Out, o.Format, &report.Output{Results: out.Results, Summaries: out.Summaries, Comparisons: out.Comparisons, Control: out.Control,
		Baseline: v, History: h})
}

// termWidth is the width of the terminal f is, or 0 when it is none.
func termWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// parsePercent reads a percentage below 100% (units.ParsePercent, the
// lab file's syntax) as a ratio: "0.5%" is 0.005.
func parsePercent(s string) (float64, error) {
	p, err := units.ParsePercent(s)
	if err != nil {
		return 0, err
	}
	if p >= 100 {
		return 0, fmt.Errorf("%q: below 100%%", s)
	}
	return p / 100, nil
}

// searchRequest reads the flags of --latency-at, --repeat and the
// searches into req.
func searchRequest(c *cli.Context, req *bench.Request) error {
	if v := c.String("latency-at"); v != "" {
		if c.Bool("search") || c.Bool("search-binary") {
			return cli.Exit("--latency-at and a search: give one of them", 2)
		}
		for _, w := range strings.Split(v, ",") {
			f, err := parsePercent(strings.TrimSpace(w))
			if err != nil || f <= 0 || f > 1 {
				return cli.Exit(fmt.Sprintf("--latency-at %s: give fractions of the rate above 0 and at most 100%%, e.g. 10%%,50%%,90%%", v), 2)
			}
			req.LatencyAt = append(req.LatencyAt, f)
		}
	}
	if req.Repeat = c.Int("repeat"); req.Repeat < 1 {
		return cli.Exit("--repeat: at least 1", 2)
	}
	if c.Bool("search") && c.Bool("search-binary") {
		return cli.Exit("--search or --search-binary, not both", 2)
	}
	if c.Bool("search") {
		req.MLR = &search.MLROptions{}
		for _, v := range c.StringSlice("goal") {
			g, err := parseGoal(v)
			if err != nil {
				return cli.Exit("--goal "+err.Error(), 2)
			}
			req.MLR.Goals = append(req.MLR.Goals, g)
		}
	}
	if c.Bool("search-binary") {
		loss, err := parsePercent(c.String("loss"))
		if err != nil {
			return cli.Exit("--loss: "+err.Error(), 2)
		}
		if c.Int("confirm") < 1 {
			return cli.Exit("--confirm: at least 1", 2)
		}
		req.Search = &search.Options{Loss: loss, Trial: c.Duration("trial"), Confirm: c.Int("confirm")}
	}
	return nil
}

// rfc2544Request reads --rfc2544 and its flags into req: the throughput
// search takes the MLRsearch goals --goal gives.
func rfc2544Request(c *cli.Context, req *bench.Request) error {
	if !c.Bool("rfc2544") {
		return nil
	}
	for _, f := range []string{"search", "search-binary", "latency-at"} {
		if c.IsSet(f) {
			return cli.Exit(fmt.Sprintf("--rfc2544 searches the throughput itself: leave out --%s", f), 2)
		}
	}
	if c.Int("b2b-trials") < 1 {
		return cli.Exit("--b2b-trials: at least 1", 2)
	}
	req.RFC2544 = &search.RFC2544Options{B2BTrials: c.Int("b2b-trials")}
	for _, v := range c.StringSlice("goal") {
		g, err := parseGoal(v)
		if err != nil {
			return cli.Exit("--goal "+err.Error(), 2)
		}
		req.RFC2544.MLR.Goals = append(req.RFC2544.MLR.Goals, g)
	}
	return nil
}

// eventsRequest reads --event into req: one run, not a search, its
// receiver read packet by packet (the outage's longest sequence gap).
func eventsRequest(c *cli.Context, req *bench.Request) error {
	words := c.StringSlice("event")
	if len(words) == 0 {
		return nil
	}
	for _, f := range []string{"search", "search-binary", "rfc2544", "latency-at", "variants", "repeat"} {
		if c.IsSet(f) {
			return cli.Exit(fmt.Sprintf("--event measures one run: leave out --%s", f), 2)
		}
	}
	if len(req.Streams) > 0 || len(req.Traffic.Frames) > 1 {
		return cli.Exit("--event measures one run of one frame size", 2)
	}
	for _, w := range words {
		e, err := events.Parse(w)
		if err != nil {
			return cli.Exit("--event: "+err.Error(), 2)
		}
		req.Events = append(req.Events, e)
	}
	if err := events.Check(req.Lab, req.Events, c.Bool(otherHostsFlag)); err != nil {
		return cli.Exit("--event: "+err.Error(), 2)
	}
	req.Latency = true
	if !c.IsSet("latency-every") {
		req.LatencyEvery = 1
	}
	return nil
}

// placementMode is --placement; a rootless lab, which cannot place a
// node's receive work, runs without its placement and says why unless
// the user asked for it.
func placementMode(c *cli.Context) string {
	if !c.IsSet("placement") && capabilities().Rootless {
		return "auto"
	}
	return c.String("placement")
}
