package main

import (
	"context"
	"os"

	"github.com/nslab/nslab/topology/lab"
	"github.com/urfave/cli/v2"
)

// execOptions is nslab exec: the node (in the lab Lab names, when its
// name is in several) and the command line to run in it.
type execOptions struct {
	Manager *lab.Manager
	Lab     string // "": the one lab that has Node
	Node    string
	Command []string
}

func execCommand(run func(context.Context, *execOptions) error) *cli.Command {
	flags := []cli.Flag{&cli.StringFlag{Name: "name", Usage: "lab `NAME`, when the node name is in several labs"}}
	return command("exec", "run a command inside a node: its network namespace and its own view (hostname, /etc, /run, /var/log, /tmp); exit code passed through", "NODE -- CMD [ARGS...]", flags, func(c *cli.Context) (*execOptions, error) {
		args := c.Args().Slice()
		if len(args) > 1 && args[1] == "--" {
			args = append(args[:1], args[2:]...)
		}
		if len(args) < 2 {
			return nil, cli.Exit("usage: nslab exec NODE -- CMD [ARGS...]", 2)
		}
		return &execOptions{Manager: manager(c), Lab: c.String("name"), Node: args[0], Command: args[1:]}, nil
	}, run, runExec)
}

// runExec replaces this process with the command, in the node's
// namespace; it returns only when that fails.
func runExec(_ context.Context, o *execOptions) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	n, v, err := o.Manager.Store().OpenNode(o.Lab, o.Node)
	if err != nil {
		return err
	}
	// A node with limits: the command runs in its cgroup, as its
	// services do.
	g, err := o.Manager.NodeCgroup(o.Lab, o.Node)
	if err == nil && g != nil {
		err = g.JoinProcess()
	}
	if err != nil {
		return err
	}
	// Only returns on failure; the command's exit code is ours.
	return n.ExecIn(v, o.Command, os.Environ())
}
