package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/bench/compare"
	"github.com/nslab/nslab/pktgen/stats"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/urfave/cli/v2"
)

// compareOptions is nslab compare: the results files (each after the
// first is compared with the first), the format, and --force.
type compareOptions struct {
	Files  []string
	Format string
	Force  bool
	// Margin is what no change means (a fraction); Figure the figure to
	// decide on ("": the comparison's main figure).
	Margin float64
	Figure string
	// Control is a positive control saved by bench --check-sensitivity
	// ("": none): "no change" stands only with one that moved.
	Control string
	Out     io.Writer
}

func compareCommand(run func(context.Context, *compareOptions) error) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table, json, csv or markdown"},
		&cli.BoolFlag{Name: "force", Usage: "compare files whose environments differ (the differences are printed)"},
		&cli.StringFlag{Name: "margin", Value: "3%", Usage: "what no change means: none larger than this `PERCENT`"},
		&cli.StringFlag{Name: "figure", Usage: "decide on this `FIGURE` (default: router_ns_per_packet, else pps, else a search's throughput)"},
		&cli.StringFlag{Name: "control", Usage: "the positive control (a `FILE` bench --check-sensitivity saved, in the set-up the files were measured in) that lets the decision say no change: without one that moved on the figure decided on, no change is cannot tell"},
	}
	cmd := command("compare", "is B faster than A: compare results files of nslab bench --out, figure by figure, and decide", "A.jsonl B.jsonl [C.jsonl ...] | VARIANTS.jsonl", flags, func(c *cli.Context) (*compareOptions, error) {
		if c.NArg() < 1 {
			return nil, cli.Exit("compare needs two results files or more (nslab compare A.jsonl B.jsonl), or one of bench --variants", 2)
		}
		m, err := parsePercent(c.String("margin"))
		if err != nil || m <= 0 {
			return nil, cli.Exit(fmt.Sprintf("--margin %s: a percentage above 0, such as 3%%", c.String("margin")), 2)
		}
		return &compareOptions{Files: c.Args().Slice(), Format: c.String("format"), Force: c.Bool("force"), Margin: m, Figure: c.String("figure"), Control: c.String("control"), Out: screen(c)}, nil
	}, run, runCompare)
	cmd.Description = "Per traffic run, frame size and figure (pps, loss, latency percentiles, the router's cost per packet, each\n" +
		"MLRsearch goal's conditional throughput): the old and new medians, the change, its 95% interval and a p-value.\n" +
		"Results measured in the same blocks (bench --variants --out: one trial of each variant back to back, or at once in\n" +
		"a duet) are compared pair by pair: the Hodges-Lehmann estimate of the pairs' log ratios, the exact Wilcoxon\n" +
		"signed-rank interval and test. Results measured apart are compared by their medians: a bootstrap interval and the\n" +
		"Mann-Whitney U test. The output says which. Each file after the first is compared with the first; one file of\n" +
		"bench --variants compares each variant in it with the first. On the main figure (the router's cost per packet,\n" +
		"else the rate) it decides: B faster or slower, no change larger than --margin (only with a positive control that\n" +
		"moved, --control; else cannot tell), or inconclusive.\n" +
		"Files measured differently (lab sha256, kernel, engine, placement, nslab version) are refused unless --force.\n\n" +
		"Examples:\n  nslab bench --repeat 5 --out a.jsonl lab.yaml    # then change something\n" +
		"  nslab bench --repeat 5 --out b.jsonl lab.yaml\n  nslab compare a.jsonl b.jsonl\n" +
		"  nslab bench --variants base,tuned --out ab.jsonl lab.yaml\n  nslab compare ab.jsonl"
	return cmd
}

// readCompared reads what is compared: each file, or each variant of
// one file.
func readCompared(files []string) ([]*report.ResultsFile, error) {
	if len(files) == 1 {
		rfs, err := report.ReadVariants(files[0])
		if err == nil && len(rfs) < 2 {
			return nil, cli.Exit(fmt.Sprintf("%s holds the results of %d variant(s): compare needs two results files (nslab compare A.jsonl B.jsonl), or one of bench --variants with two variants or more", files[0], len(rfs)), 2)
		}
		return rfs, err
	}
	var rfs []*report.ResultsFile
	for _, f := range files {
		rf, err := report.ReadResults(f)
		if err != nil {
			return nil, err
		}
		rfs = append(rfs, rf)
	}
	return rfs, nil
}

// decide makes the comparison's decision on the figure asked for, or
// its main one.
func (o *compareOptions) decide(c *report.Comparison) error {
	key, ok := c.MainFigure()
	if o.Figure != "" {
		key, ok = report.FigureKey{}, false
		for _, x := range c.Changes {
			if x.Figure == o.Figure && (!ok || x.Frame < key.Frame) {
				key, ok = report.FigureKey{Traffic: x.Traffic, Frame: x.Frame, Figure: x.Figure}, true
			}
		}
		if !ok {
			return fmt.Errorf("--figure %s: the files share no such figure", o.Figure)
		}
	}
	if !ok {
		return nil // nothing to decide on: the figures are printed
	}
	plan := stats.Plan{Looks: []int{6}, Alpha: bench.VariantAlpha, Margin: o.Margin, Power: bench.VariantPower}
	outcome, err := c.Decide(key, plan, true)
	if err != nil || outcome != stats.Same {
		return err
	}
	return o.vouch(c.Decision)
}

// vouch keeps decision d's "no change" when the positive control given
// moved on its figure, and makes it cannot tell otherwise.
func (o *compareOptions) vouch(d *report.Decision) error {
	if o.Control == "" {
		d.CannotTellWith(fmt.Sprintf("files give no evidence that %s could move in the set-up they were measured in: measure a positive control there (bench --check-sensitivity) and give the file it saved (--control)", d.Figure))
		return nil
	}
	ctl, err := compare.ReadControl(o.Control)
	if err != nil {
		return err
	}
	d.Control = ctl
	if !ctl.Seen || ctl.Figure != d.Figure {
		d.CannotTellWith(fmt.Sprintf("the positive control of %s (%s) did not show that %s moves: %s", o.Control, ctl.Figure, d.Figure, ctl.Sentence))
	}
	return nil
}

// runCompare reads the files and compares each with the first.
func runCompare(_ context.Context, o *compareOptions) error {
	rfs, err := readCompared(o.Files)
	var exit cli.ExitCoder
	if errors.As(err, &exit) {
		return err
	}
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	base := rfs[0]
	for i, other := range rfs[1:] {
		cmp, err := report.Compare(base, other, o.Force)
		var mm *report.MismatchError
		if errors.As(err, &mm) {
			return cli.Exit(err.Error()+"\n(compare them anyway with --force)", 1)
		}
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		if err := o.decide(cmp); err != nil {
			return cli.Exit(err.Error(), 2)
		}
		if i > 0 {
			fmt.Fprintln(o.Out)
		}
		if err := cmp.Write(o.Out, o.Format); err != nil {
			return err
		}
	}
	return nil
}
