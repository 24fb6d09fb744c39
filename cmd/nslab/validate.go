package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// validateOptions is nslab validate: the lab as read (a file that does not
// validate never gets this far) and where to say so.
type validateOptions struct {
	Lab *spec.Lab
	Out io.Writer
}

func validateCommand(run func(context.Context, *validateOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a topology file without touching the machine",
		ArgsUsage: "[FILE]",
		Flags:     []cli.Flag{topoFlag()},
		Action: action(func(c *cli.Context) (*validateOptions, error) {
			l, err := readLab(c)
			return &validateOptions{Lab: l, Out: c.App.Writer}, err
		}, or(run, runValidate)),
	}
}

func runValidate(_ context.Context, o *validateOptions) error {
	l := o.Lab
	hosts := ""
	if l.Spans() {
		hosts = fmt.Sprintf(", on hosts %s (deploy with --host NAME on each)", strings.Join(l.HostNames(), ", "))
	}
	if names := l.VariantNames(); len(names) > 0 {
		hosts += fmt.Sprintf(", variants %s (bench --variants)", strings.Join(names, ", "))
	}
	fmt.Fprintf(o.Out, "%s: lab %s is valid: %d nodes, %d links%s\n", l.File, l.Name, len(l.Nodes), len(l.Links), hosts)
	return nil
}
