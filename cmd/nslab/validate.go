package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/nslab/nslab/topology/walk"
	"io"
	"strings"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// validateOptions is nslab validate: the lab as read (a file that does not
// validate never gets this far) and where to say so.
type validateOptions struct {
	Lab     *spec.Lab
	Manager *lab.Manager
	Out     io.Writer
}

func validateCommand(run func(context.Context, *validateOptions) error) *cli.Command {
	flags := []cli.Flag{topoFlag(), prefixFlag()}
	return command("validate", "check a topology file without touching the machine (a traffic run the file's routes give no path is judged by the deployed lab's kernels)", "[FILE]", flags, func(c *cli.Context) (*validateOptions, error) {
		l, err := readLab(c)
		return &validateOptions{Lab: l, Manager: manager(c), Out: c.App.Writer}, err
	}, run, runValidate)
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
	if err := lab.CheckPrograms(l); err != nil {
		return fmt.Errorf("%s: lab %s is valid, but would not deploy on this machine: %w", l.File, l.Name, err)
	}
	if err := lab.CheckKernel(l); err != nil {
		return fmt.Errorf("%s: lab %s is valid, but would not deploy on this machine: %w", l.File, l.Name, err)
	}
	if len(l.Unrouted) > 0 {
		return o.unrouted()
	}
	fmt.Fprintf(o.Out, "%s: lab %s is valid: %d nodes, %d links%s\n", l.File, l.Name, len(l.Nodes), len(l.Links), hosts)
	return nil
}

// unrouted judges the traffic runs the file's routes do not take to their
// destination: by the deployed lab's kernels where it is deployed here
// and can be entered (exec lines, daemons and users add routes), else by
// the file, whose problems they are then.
func (o *validateOptions) unrouted() error {
	l := o.Lab
	r, err := o.Manager.Open(l)
	if err != nil || lab.CheckPrivileges() != nil {
		if r != nil {
			r.Close()
		}
		return l.Unrouted
	}
	defer r.Close()
	if err := r.Learn(); err != nil {
		return err
	}
	var still spec.Problems
	for _, p := range l.Unrouted {
		var i int
		if _, err := fmt.Sscanf(p.Path, "traffic[%d]", &i); err != nil || i >= len(l.Traffic) {
			still = append(still, p) // a variant's run: the file's answer
			continue
		}
		var ps spec.Problems
		if errors.As(walk.TrafficPath(l, l.Traffic[i]), &ps) {
			p.Msg = ps[0].Msg + " (the deployed lab's kernels give no path either)"
			still = append(still, p)
		}
	}
	if len(still) > 0 {
		return still
	}
	fmt.Fprintf(o.Out, "%s: lab %s is valid: %d nodes, %d links; %d traffic run(s) have no path by the file's routes, and the deployed lab's kernels give them one (nslab path shows it, and where the kernels differ from the file)\n",
		l.File, l.Name, len(l.Nodes), len(l.Links), len(l.Unrouted))
	return nil
}
