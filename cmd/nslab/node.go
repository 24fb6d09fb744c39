package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nslab/nslab/topology/lab"
	"github.com/urfave/cli/v2"
)

// nodeOptions is nslab node stop|start: a node of a deployed lab, and
// whether it stops or starts.
type nodeOptions struct {
	Manager *lab.Manager
	Lab     string
	Node    string
	Start   bool
	Out     io.Writer
}

func nodeCommand(run func(context.Context, *nodeOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "node",
		Usage:     "stop a deployed lab's node (its links down at both ends, its processes stopped) or start it again",
		ArgsUsage: "stop|start NODE   (or LAB:NODE)",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "name", Usage: "lab `NAME` (when several labs have the node)"}, nodeTopoFlag()},
		Action: action(func(c *cli.Context) (*nodeOptions, error) {
			args := c.Args().Slice()
			if len(args) != 2 || args[0] != "stop" && args[0] != "start" {
				return nil, cli.Exit("usage: nslab node stop|start NODE", 2)
			}
			name, err := labOfNode(c)
			if err != nil {
				return nil, err
			}
			return &nodeOptions{Manager: manager(c), Lab: name, Node: args[1], Start: args[0] == "start", Out: c.App.Writer}, nil
		}, or(run, runNode)),
	}
}

func runNode(ctx context.Context, o *nodeOptions) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	found, node, _, err := o.Manager.LocateNode(o.Lab, o.Node)
	if err != nil {
		return err
	}
	start := time.Now()
	if o.Start {
		err = o.Manager.StartNode(ctx, found, node)
	} else {
		err = o.Manager.StopNode(found, node)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s:%s %s in %v\n", found, node, map[bool]string{true: "started", false: "stopped"}[o.Start], time.Since(start).Round(time.Millisecond))
	return nil
}
