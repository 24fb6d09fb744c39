package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// applyOptions is nslab apply: the edited file of a deployed lab, and
// whether to print the plan instead.
type applyOptions struct {
	Lab     *spec.Lab
	Manager *lab.Manager
	DryRun  bool
	Out     io.Writer
}

func applyCommand(run func(context.Context, *applyOptions) error) *cli.Command {
	flags := []cli.Flag{
		hostFlag(),
		topoFlag(),
		prefixFlag(),
		ownerFlag(),
		&cli.BoolFlag{Name: "dry-run", Usage: "print the steps taken back and the steps made, with their shell lines, and change nothing"},
	}
	return command("apply", "make a deployed lab what its edited file says, changing only what differs (atomic: on failure or Ctrl-C the lab is as before)", "[FILE]", flags, func(c *cli.Context) (*applyOptions, error) {
		l, err := readPart(c)
		return &applyOptions{Lab: l, Manager: manager(c), DryRun: c.Bool("dry-run"), Out: screen(c)}, err
	}, run, runApply)
}

func runApply(ctx context.Context, o *applyOptions) error {
	if o.DryRun {
		return printScript(o.Out)(o.Manager.ApplyScript(o.Lab))
	}
	// Applying is the way on from another file: say so, once it is done,
	// when the lab came from another path (an edit of the same file needs
	// no word).
	from := ""
	if st, err := o.Manager.Store().LoadState(o.Lab.Name); err == nil && st != nil {
		if abs, err := filepath.Abs(o.Lab.File); err == nil && abs != st.File && st.SHA256 != o.Lab.SHA256 {
			from = fmt.Sprintf("; it was deployed from %s (sha256 %.12s), and is now what %s says", st.File, st.SHA256, o.Lab.File)
		}
	}
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	res, err := o.Manager.Apply(ctx, o.Lab)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "applied lab %s: %d step(s) taken back, %d made in %s", res.Lab, res.Undone, res.Done, res.Duration.Round(10_000))
	for _, x := range []struct {
		what  string
		nodes []string
	}{{"added", res.Added}, {"removed", res.Removed}, {"rebuilt", res.Rebuilt}} {
		if len(x.nodes) > 0 {
			fmt.Fprintf(o.Out, "; %s %s", x.what, strings.Join(x.nodes, ", "))
		}
	}
	fmt.Fprintln(o.Out, from)
	return nil
}
