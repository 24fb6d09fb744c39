package main

import (
	"fmt"

	"github.com/nslab/nslab/topology/lab"
	"github.com/urfave/cli/v2"
)

func deployCommand() *cli.Command {
	return &cli.Command{
		Name:      "deploy",
		Usage:     "build a lab (atomic: on failure or Ctrl-C everything created is removed)",
		ArgsUsage: "[FILE]",
		Flags: []cli.Flag{
			hostFlag(),
			topoFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "print the equivalent iproute2/sysctl shell script, step for step, and change nothing"},
		},
		Action: func(c *cli.Context) error {
			l, err := readPart(c)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				_, err := fmt.Fprint(c.App.Writer, lab.DeployScript(l, c.String("sysfs")))
				return err
			}
			if err := lab.CheckPrivileges(); err != nil {
				return err
			}
			res, err := manager(c).Deploy(c.Context, l)
			if err != nil {
				return fmt.Errorf("deploy lab %s: %w", l.Name, err)
			}
			part := ""
			if l.HostName != "" {
				part = fmt.Sprintf(" (host %s's part), %d VXLAN links to other hosts", l.HostName, len(l.Tunnels))
			}
			fmt.Fprintf(c.App.Writer, "deployed lab %s: %d nodes, %d links%s, %d steps in %s\n",
				l.Name, len(l.Nodes), len(l.Links), part, res.Steps, res.Duration.Round(10_000))
			return nil
		},
	}
}
