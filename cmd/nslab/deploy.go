package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/rootless"
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
	ErrOut  io.Writer // the progress line of a large lab's deploy, on a terminal
	Quiet   bool      // -q: no progress line
}

// progressNodes: a lab of more nodes than this shows its deploy's
// progress (a smaller one deploys in well under a second).
const progressNodes = 100

func deployCommand(run func(context.Context, *deployOptions) error) *cli.Command {
	flags := []cli.Flag{
		hostFlag(),
		topoFlag(),
		prefixFlag(),
		ownerFlag(),
		&cli.BoolFlag{Name: "dry-run", Usage: "print the equivalent iproute2/sysctl shell script, step for step, and change nothing"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: fmt.Sprintf("no progress line (shown on a terminal for a lab of more than %d nodes)", progressNodes)},
		&cli.BoolFlag{Name: "strict", Usage: "a configuration line a routing daemon refuses fails the deploy (default: the deploy goes on without it, as the daemon does, and names it)"},
	}
	return command("deploy", "build a lab (atomic: on failure or Ctrl-C everything created is removed)", "[FILE]", flags, func(c *cli.Context) (*deployOptions, error) {
		l, err := readPart(c)
		m := manager(c)
		m.Strict = c.Bool("strict")
		return &deployOptions{Lab: l, Manager: m, DryRun: c.Bool("dry-run"), Sysfs: c.String("sysfs"), Out: screen(c),
			ErrOut: c.App.ErrWriter, Quiet: c.Bool("quiet")}, err
	}, run, runDeploy)
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
	if o.Manager.Rootless && l.NodesPlaced() {
		l.Unplace(rootless.Unplaced)
		fmt.Fprintf(o.ErrOut, "nslab: lab %s is deployed without its nodes' CPU placement: %s\n", l.Name, rootless.Unplaced)
	}
	m := *o.Manager // this deploy's own, with its progress line
	if len(l.Nodes) > progressNodes {
		status := newStatusLine(o.ErrOut, o.Quiet, fmt.Sprintf("deploying lab %s (%d nodes)", l.Name, len(l.Nodes)))
		defer status.Stop()
		m.Progress = deployProgress(status)
	}
	res, err := m.Deploy(ctx, l)
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
	for _, w := range res.Warnings {
		fmt.Fprintf(o.Out, "warning: %s (deploy --strict refuses it)\n", w)
	}
	return nil
}

// deployProgress sets the status line to the deploy's last step at most
// five times a second (a large lab has thousands of steps); nil when the
// line is off.
func deployProgress(status *statusLine) func(done, total int, step string) {
	set := status.Func()
	if set == nil {
		return nil
	}
	var last time.Time
	return func(done, total int, step string) {
		if done < total && time.Since(last) < 200*time.Millisecond {
			return
		}
		last = time.Now()
		set(fmt.Sprintf("step %d of %d: %s", done, total, step))
	}
}
