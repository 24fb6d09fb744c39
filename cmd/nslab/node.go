package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nslab/nslab/topology/lab"
	"github.com/urfave/cli/v2"
)

// switchOptions is a verb that turns one thing of a deployed lab one of
// two ways: nslab link down|up NODE:IF, nslab node stop|start NODE.
type switchOptions struct {
	Manager *lab.Manager
	Lab     string // the thing's lab
	Target  string // NODE:IF or NODE, as given
	On      bool   // up, start
	Out     io.Writer
}

// switchCommand is such a verb: NAME OFF|ON TARGET.
func switchCommand(name, usage, off, on, target string, run, def func(context.Context, *switchOptions) error) *cli.Command {
	flags := []cli.Flag{&cli.StringFlag{Name: "name", Usage: "lab `NAME` (when several labs have the node)"}, nodeTopoFlag(), asDeployedFlag()}
	return command(name, usage, off+"|"+on+" "+target+"   (or LAB:"+target+")", flags, func(c *cli.Context) (*switchOptions, error) {
		args := c.Args().Slice()
		if len(args) != 2 || args[0] != off && args[0] != on {
			return nil, cli.Exit(fmt.Sprintf("usage: nslab %s %s|%s %s", name, off, on, target), 2)
		}
		labName, err := labOfNode(c)
		if err != nil {
			return nil, err
		}
		return &switchOptions{Manager: manager(c), Lab: labName, Target: args[1], On: args[0] == on, Out: screen(c)}, nil
	}, run, def)
}

func nodeCommand(run func(context.Context, *switchOptions) error) *cli.Command {
	return switchCommand("node", "stop a deployed lab's node (its links down at both ends, its processes stopped) or start it again", "stop", "start", "NODE", run, runNode)
}

func runNode(ctx context.Context, o *switchOptions) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	found, node, _, err := o.Manager.Store().LocateNode(o.Lab, o.Target)
	if err != nil {
		return err
	}
	start := time.Now()
	if o.On {
		err = o.Manager.StartNode(ctx, found, node)
	} else {
		err = o.Manager.StopNode(found, node)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s:%s %s in %v\n", found, node, map[bool]string{true: "started", false: "stopped"}[o.On], time.Since(start).Round(time.Millisecond))
	return nil
}
