package main

import (
	"context"
	"fmt"
	"io"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// deployOptions is nslab deploy: this host's part of the lab, and whether
// to print the equivalent script instead (naming sysfs for SR-IOV).
type deployOptions struct {
	Lab     *spec.Lab
	Manager *lab.Manager
	DryRun  bool
	Sysfs   string
	Out     io.Writer
}

func deployCommand(run func(context.Context, *deployOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "deploy",
		Usage:     "build a lab (atomic: on failure or Ctrl-C everything created is removed)",
		ArgsUsage: "[FILE]",
		Flags: []cli.Flag{
			hostFlag(),
			topoFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "print the equivalent iproute2/sysctl shell script, step for step, and change nothing"},
		},
		Action: action(func(c *cli.Context) (*deployOptions, error) {
			l, err := readPart(c)
			return &deployOptions{Lab: l, Manager: manager(c), DryRun: c.Bool("dry-run"), Sysfs: c.String("sysfs"), Out: c.App.Writer}, err
		}, or(run, runDeploy)),
	}
}

func runDeploy(ctx context.Context, o *deployOptions) error {
	l := o.Lab
	if o.DryRun {
		_, err := fmt.Fprint(o.Out, lab.DeployScript(l, o.Sysfs))
		return err
	}
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	res, err := o.Manager.Deploy(ctx, l)
	if err != nil {
		return fmt.Errorf("deploy lab %s: %w", l.Name, err)
	}
	part := ""
	if l.OnHost() != "" {
		part = fmt.Sprintf(" (host %s's part), %d VXLAN links to other hosts", l.OnHost(), len(l.Tunnels()))
	}
	fmt.Fprintf(o.Out, "deployed lab %s: %d nodes, %d links%s, %d steps in %s\n",
		l.Name, len(l.Nodes), len(l.Links), part, res.Steps, res.Duration.Round(10_000))
	for _, p := range l.Unrouted {
		fmt.Fprintf(o.Out, "note: %v; the kernels' routes decide (exec lines, daemons, routes added by hand): nslab path shows them\n", p)
	}
	return nil
}
