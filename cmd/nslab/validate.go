package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a topology file without touching the machine",
		ArgsUsage: "[FILE]",
		Flags:     []cli.Flag{topoFlag()},
		Action: func(c *cli.Context) error {
			l, err := readLab(c)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s: lab %s is valid: %d nodes, %d links\n", l.File, l.Name, len(l.Nodes), len(l.Links))
			return nil
		},
	}
}
