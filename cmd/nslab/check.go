package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nslab/nslab/topology/check"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// checkOptions is nslab check: this host's part of a deployed lab, how
// long to wait per echo and how often to try, and the format.
type checkOptions struct {
	Lab     *spec.Lab
	Manager *lab.Manager
	check.Options
	Format string // matrix, list or json
	Out    io.Writer
	// Wait, when not zero, waits up to it for the routing to converge
	// (see check.Converge); Settle is how long the tables must stay
	// the same.
	Wait, Settle time.Duration
	// ErrOut is where the status line of a wait goes (a terminal, else
	// nowhere); Quiet is -q.
	ErrOut io.Writer
	Quiet  bool
}

func checkCommand(run func(context.Context, *checkOptions) error) *cli.Command {
	flags := []cli.Flag{
		hostFlag(),
		topoFlag(),
		prefixFlag(),
		asDeployedFlag(),
		&cli.DurationFlag{Name: "timeout", Value: time.Second, Usage: "wait per echo"},
		&cli.IntFlag{Name: "tries", Value: 2, Usage: "echoes per pair until one answers"},
		&cli.StringFlag{Name: "format", Value: "matrix", Usage: "matrix, list or json ({pairs, differences, summary, ok})"},
		&cli.DurationFlag{Name: "wait", Usage: "wait up to `DURATION` until every pair answers as the routes say and the nodes' routing tables have stopped changing, then print how long convergence took (labs whose routers run FRR or BIRD)"},
		&cli.DurationFlag{Name: "settle", Value: 2 * time.Second, Usage: "with --wait: how long the routing tables must stay the same"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "with --wait: no status line while it waits"},
	}
	return command("check", "ping every address of a deployed lab from every node and compare with what its routes, NAT and firewalls say", "[FILE]", flags, func(c *cli.Context) (*checkOptions, error) {
		switch c.String("format") {
		case "matrix", "list", "json":
		default:
			return nil, cli.Exit("--format is matrix, list or json", 2)
		}
		l, err := readDeployed(c)
		return &checkOptions{Lab: l, Manager: manager(c), Options: check.Options{Timeout: c.Duration("timeout"), Tries: c.Int("tries")},
			Format: c.String("format"), Out: screen(c), Wait: c.Duration("wait"), Settle: c.Duration("settle"),
			ErrOut: c.App.ErrWriter, Quiet: c.Bool("quiet")}, err
	}, run, runCheck)
}

// runCheck pings every pair and writes the results; it fails (exit 1)
// when a pair is broken or unexpectedly reachable.
func runCheck(ctx context.Context, o *checkOptions) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	r, err := o.Manager.Open(o.Lab)
	if err != nil {
		return fmt.Errorf("lab %s is not deployed (or not completely): nslab deploy %s first: %w", o.Lab.Name, o.Lab.File, err)
	}
	defer r.Close()
	pairs, conv, err := o.probe(ctx, r)
	if err != nil {
		return err
	}
	summary, bad := pairs.Summary()
	if missing := deployed.Missing(r.Differences); len(missing) > 0 {
		summary += fmt.Sprintf("; the kernels lack %d thing(s) the file declares (listed above)", len(missing))
		bad = true
	}
	converged := "" // a line of its own in a table, a clause of the summary in JSON
	if o.Wait > 0 && !bad {
		converged = conv.String()
	}
	switch o.Format {
	case "json":
		if converged != "" {
			summary += "; " + converged
		}
		out := checkJSON{Pairs: append(check.Pairs{}, pairs...), Differences: append([]deployed.Difference{}, r.Differences...), Summary: summary, OK: !bad}
		if err := writeJSON(o.Out, out); err != nil {
			return err
		}
		if bad { // the summary goes where the JSON does not
			return cli.Exit("check failed: "+summary, 1)
		}
		return nil
	case "list":
		pairs.WriteList(o.Out)
	default:
		pairs.WriteMatrix(o.Out, o.Lab)
	}
	pairs.WriteProblems(o.Out)
	writeDifferences(o.Out, r.Differences)
	fmt.Fprintln(o.Out, summary)
	if converged != "" {
		fmt.Fprintln(o.Out, converged)
	}
	if bad {
		return cli.Exit("", 1) // said above, once
	}
	return nil
}

// checkJSON is check's JSON: every pair, where the kernels differ from
// the file (findings, as the other formats list them), and the summary.
type checkJSON struct {
	Pairs       check.Pairs           `json:"pairs"`
	Differences []deployed.Difference `json:"differences"`
	Summary     string                `json:"summary"`
	OK          bool                  `json:"ok"`
}

// writeDifferences lists where the deployed lab's kernels differ from the
// file: what they lack of the file's declarations (failures: the lab is
// not as its file says), then what they have beyond it (findings: the
// check's expectations are the kernels' there, daemons' and exec lines'
// routes among them).
func writeDifferences(w io.Writer, ds []deployed.Difference) {
	if len(ds) == 0 {
		return
	}
	missing := deployed.Missing(ds)
	if len(missing) > 0 {
		fmt.Fprintf(w, "the kernels lack %d thing(s) the file declares:\n", len(missing))
		for _, d := range missing {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if more := len(ds) - len(missing); more > 0 {
		other := ""
		if len(missing) > 0 {
			other = " other"
		}
		fmt.Fprintf(w, "the kernels differ from the file in %d%s way(s) (the expectations above are the kernels'):\n", more, other)
		for _, d := range ds {
			if !d.Missing {
				fmt.Fprintf(w, "  %s\n", d)
			}
		}
	}
}

// probe runs the check once, by the kernels' addresses and routes, or,
// with --wait, until the routing has converged.
func (o *checkOptions) probe(ctx context.Context, r *lab.Running) (check.Pairs, check.Convergence, error) {
	if o.Wait <= 0 {
		pairs, err := check.Run(ctx, r.Opened, o.Options)
		return pairs, check.Convergence{}, err
	}
	var since check.Mark
	if st, err := o.Manager.Recorded(o.Lab.Name); err == nil && st != nil {
		since = check.MarkOf(st)
	}
	status := newStatusLine(o.ErrOut, o.Quiet, fmt.Sprintf("waiting up to %v for the routing to converge", o.Wait))
	opts := o.Options
	opts.Status = status.Func()
	pairs, conv, err := check.Converge(ctx, r.Opened, opts, o.Wait, o.Settle, since)
	status.Stop()
	if err != nil && pairs != nil {
		pairs.WriteProblems(o.Out)
	}
	return pairs, conv, err
}
