package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/urfave/cli/v2"
)

// compareOptions is nslab compare: the results files (each after the
// first is compared with the first), the format, and --force.
type compareOptions struct {
	Files  []string
	Format string
	Force  bool
	Out    io.Writer
}

func compareCommand(run func(context.Context, *compareOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "is B faster than A: compare results files of nslab bench --out, figure by figure",
		ArgsUsage: "A.jsonl B.jsonl [C.jsonl ...]",
		Description: "Per traffic run, frame size and figure (pps, loss, latency percentiles, each MLRsearch goal's conditional\n" +
			"throughput): the old and new medians, the change and its 95% bootstrap interval, and the two-sided Mann-Whitney U\n" +
			"test's p-value, significant below 0.05 (as benchstat decides). Each file after the first is compared with the first.\n" +
			"Files measured differently (lab sha256, kernel, engine, placement, nslab version) are refused unless --force.\n\n" +
			"Examples:\n  nslab bench --repeat 5 --out a.jsonl lab.yaml    # then change something\n" +
			"  nslab bench --repeat 5 --out b.jsonl lab.yaml\n  nslab compare a.jsonl b.jsonl",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, json, csv or markdown"},
			&cli.BoolFlag{Name: "force", Usage: "compare files whose environments differ (the differences are printed)"},
		},
		Action: action(func(c *cli.Context) (*compareOptions, error) {
			if c.NArg() < 2 {
				return nil, cli.Exit("compare needs two results files or more: nslab compare A.jsonl B.jsonl", 2)
			}
			return &compareOptions{Files: c.Args().Slice(), Format: c.String("format"), Force: c.Bool("force"), Out: c.App.Writer}, nil
		}, or(run, runCompare)),
	}
}

// runCompare reads the files and compares each with the first.
func runCompare(_ context.Context, o *compareOptions) error {
	base, err := report.ReadResults(o.Files[0])
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	for i, f := range o.Files[1:] {
		other, err := report.ReadResults(f)
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		cmp, err := report.Compare(base, other, o.Force)
		var mm *report.MismatchError
		if errors.As(err, &mm) {
			return cli.Exit(err.Error()+"\n(compare them anyway with --force)", 1)
		}
		if err != nil {
			return cli.Exit(err.Error(), 1)
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
