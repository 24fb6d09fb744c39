package main

import (
	"os"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/urfave/cli/v2"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run a command inside a node's namespace (as ip netns exec; exit code passed through)",
		ArgsUsage: "NODE -- CMD [ARGS...]",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "name", Usage: "lab `NAME`, when the node name is in several labs"}},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1], args[2:]...)
			}
			if len(args) < 2 {
				return cli.Exit("usage: nslab exec NODE -- CMD [ARGS...]", 2)
			}
			if err := lab.CheckPrivileges(); err != nil {
				return err
			}
			m := manager(c)
			name, err := m.FindNode(c.String("name"), args[0])
			if err != nil {
				return err
			}
			n, err := ns.Open(m.NetnsDirOrDefault(), name)
			if err != nil {
				return err
			}
			// Only returns on failure; the command's exit code is ours.
			return n.Exec(args[1:], os.Environ())
		},
	}
}
