package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "run a traffic run of the file through the lab and report pps, Mbps and loss hop by hop",
		ArgsUsage: "[FILE]",
		Flags: []cli.Flag{
			topoFlag(),
			&cli.StringFlag{Name: "traffic", Usage: "traffic run `NAME` (default: the first)"},
			&cli.DurationFlag{Name: "duration", Usage: "override the run's duration"},
			&cli.Uint64Flag{Name: "count", Usage: "override the run's packet count"},
			&cli.IntSliceFlag{Name: "frame", Usage: "override the frame size(s), bytes with FCS"},
			&cli.StringFlag{Name: "engine", Usage: "auto, pktgen or userspace"},
			&cli.StringFlag{Name: "from", Usage: "sender `NODE:IF` (a run without a traffic: section)"},
			&cli.StringFlag{Name: "to", Usage: "destination `ADDRESS` (with --from)"},
			&cli.StringFlag{Name: "rate", Usage: "max, or e.g. 200kpps, 500Mbps"},
			&cli.IntFlag{Name: "threads", Usage: "sending threads"},
			&cli.StringFlag{Name: "measure", Usage: "measure these `NODE:IF,...` instead of the path's interfaces (the last is the receiver)"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "sampling interval (100ms and up)"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, json, csv or markdown"},
			&cli.BoolFlag{Name: "keep", Usage: "keep a lab that bench deployed"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no live lines"},
			&cli.StringFlag{Name: "out", Usage: "append each completed run to `FILE` as a JSON line, synced at once"},
			&cli.StringFlag{Name: "plot", Usage: "draw the sweep or search into `FILE`.png or .svg"},
			&cli.BoolFlag{Name: "search", Usage: "find the throughput per frame size (RFC 2544): binary search over the rate"},
			&cli.StringFlag{Name: "loss", Value: "0", Usage: "with --search: the highest acceptable loss, e.g. 0.5%"},
			&cli.DurationFlag{Name: "trial", Value: 2 * time.Second, Usage: "with --search: length of each trial"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the equivalent kernel pktgen shell script (destination MAC resolved) and change nothing"},
		},
		Action: runBench,
	}
}

func runBench(c *cli.Context) error {
	l, path, source, err := readLab(c)
	if err != nil {
		return err
	}
	t, err := pickTraffic(c, l)
	if err != nil {
		return err
	}
	if c.Duration("interval") < 100*time.Millisecond {
		return cli.Exit("--interval: at least 100ms", 2)
	}
	if c.Bool("dry-run") {
		script, err := bench.DryRun(l, t, bench.Options{NetnsDir: manager(c).NetnsDirOrDefault()})
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(c.App.Writer, script)
		return err
	}
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	m := manager(c)
	if _, err := m.Deploy(c.Context, l, path, source); err == nil {
		fmt.Fprintf(c.App.ErrWriter, "deployed lab %s for this run\n", l.Name)
		if !c.Bool("keep") {
			defer func() {
				if _, err := m.Destroy(l.Name); err != nil {
					fmt.Fprintln(c.App.ErrWriter, "nslab: destroy:", err)
				}
			}()
		}
	} else if !isDeployed(err) {
		return fmt.Errorf("deploy lab %s: %w", l.Name, err)
	}
	var live io.Writer = c.App.ErrWriter
	if c.Bool("quiet") {
		live = nil
	}
	var out *os.File
	if p := c.String("out"); p != "" {
		if out, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("results file: %w", err)
		}
		defer out.Close()
	}
	sum := sha256.Sum256(source)
	opts := bench.Options{NetnsDir: m.NetnsDirOrDefault(), Interval: c.Duration("interval"), Live: live,
		Compact: termWidth(os.Stderr) < 100, LabHash: hex.EncodeToString(sum[:]), Version: version}
	if v := c.String("measure"); v != "" {
		for _, e := range strings.Split(v, ",") {
			node, iface, ok := strings.Cut(e, ":")
			if !ok {
				return cli.Exit(fmt.Sprintf("--measure %q: give NODE:IF,...", e), 2)
			}
			opts.Measure = append(opts.Measure, spec.Endpoint{Node: node, Interface: iface})
		}
	}
	if c.Bool("search") {
		return runSearch(c, l, t, opts, out)
	}
	var reps []*bench.Report
	for i, frame := range t.Frames {
		if len(t.Frames) > 1 {
			fmt.Fprintf(c.App.ErrWriter, "[%d/%d] frame %d bytes\n", i+1, len(t.Frames), frame)
		}
		rep, err := bench.Run(c.Context, l, t, frame, opts)
		if rep != nil {
			reps = append(reps, rep)
			if out != nil {
				if werr := appendLine(out, rep); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			if len(reps) > 0 {
				bench.Write(c.App.Writer, c.String("format"), reps)
			}
			return err
		}
	}
	if p := c.String("plot"); p != "" {
		if err := bench.PlotSweep(p, reps); err != nil {
			return err
		}
	}
	return bench.Write(c.App.Writer, c.String("format"), reps)
}

// termWidth is the width of the terminal f is, or 0 when it is none.
func termWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// runSearch finds the throughput of every frame size of the run.
func runSearch(c *cli.Context, l *spec.Lab, t *spec.Traffic, opts bench.Options, out *os.File) error {
	loss, err := parsePercent(c.String("loss"))
	if err != nil {
		return cli.Exit("--loss: "+err.Error(), 2)
	}
	var rs []*bench.SearchResult
	for i, frame := range t.Frames {
		fmt.Fprintf(c.App.ErrWriter, "[%d/%d] searching the throughput of %d-byte frames\n", i+1, len(t.Frames), frame)
		r, err := bench.Search(c.Context, l, t, frame, opts, bench.SearchOptions{Loss: loss, Trial: c.Duration("trial")})
		if r != nil && len(r.Trials) > 0 {
			rs = append(rs, r)
			if out != nil {
				if werr := appendLine(out, r); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			return err
		}
	}
	if p := c.String("plot"); p != "" {
		if err := bench.PlotSearch(p, l.Name, rs); err != nil {
			return err
		}
	}
	if c.String("format") == "json" {
		return writeJSON(c.App.Writer, rs)
	}
	bench.WriteSearch(c.App.Writer, rs)
	return nil
}

// parsePercent reads "0.5%" or "0.005" as a ratio.
func parsePercent(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q: a ratio such as 0.005 or a percentage such as 0.5%%", s)
	}
	if pct {
		v /= 100
	}
	if v >= 1 {
		return 0, fmt.Errorf("%q: below 100%%", s)
	}
	return v, nil
}

// appendLine writes one report as one JSON line in one write, then syncs:
// a crash or kill never loses a completed run or leaves half a line.
func appendLine(f *os.File, rep any) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	return f.Sync()
}

// pickTraffic chooses the traffic run and applies the command-line
// overrides.
func pickTraffic(c *cli.Context, l *spec.Lab) (*spec.Traffic, error) {
	var cp spec.Traffic
	switch {
	case c.String("from") != "" || c.String("to") != "":
		cp = spec.Traffic{Name: "command-line", Frames: []int{64}, Threads: 1, Engine: "auto", Duration: 10 * time.Second}
		node, iface, ok := strings.Cut(c.String("from"), ":")
		to, err := netip.ParseAddr(c.String("to"))
		if !ok || err != nil {
			return nil, cli.Exit("--from NODE:IF and --to ADDRESS go together, e.g. --from ns1:veth1 --to 10.0.2.1", 2)
		}
		cp.From, cp.To = spec.Endpoint{Node: node, Interface: iface}, to
	case len(l.Traffic) == 0:
		return nil, cli.Exit(fmt.Sprintf("%s has no traffic: section: add a run (see examples/client-router-server.yaml) or give --from and --to", l.File), 2)
	default:
		t := l.Traffic[0]
		if name := c.String("traffic"); name != "" {
			if t = l.TrafficRun(name); t == nil {
				return nil, cli.Exit(fmt.Sprintf("%s has no traffic run %q", l.File, name), 2)
			}
		}
		cp = *t
	}
	if r := c.String("rate"); r != "" {
		pps, mbps, err := spec.ParseRate(r)
		if err != nil {
			return nil, cli.Exit("--rate: "+err.Error(), 2)
		}
		cp.RatePPS, cp.RateMbps = pps, mbps
	}
	if n := c.Int("threads"); n > 0 {
		cp.Threads = n
	}
	if d := c.Duration("duration"); d > 0 {
		cp.Duration, cp.Count = d, 0
	}
	if n := c.Uint64("count"); n > 0 {
		cp.Count, cp.Duration = n, 0
	}
	if f := c.IntSlice("frame"); len(f) > 0 {
		cp.Frames = f
	}
	if e := c.String("engine"); e != "" {
		cp.Engine = e
	}
	return &cp, nil
}

// isDeployed reports whether a deploy failed only because the lab is up.
func isDeployed(err error) bool {
	var ce *lab.ConflictError
	return errors.As(err, &ce) && ce.AlreadyDeployed
}
