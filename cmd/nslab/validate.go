package main

import (
	"fmt"
	"strings"

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
			hosts := ""
			if l.Spans() {
				hosts = fmt.Sprintf(", on hosts %s (deploy with --host NAME on each)", strings.Join(l.HostNames(), ", "))
			}
			if names := l.VariantNames(); len(names) > 0 {
				hosts += fmt.Sprintf(", variants %s (bench --variants)", strings.Join(names, ", "))
			}
			fmt.Fprintf(c.App.Writer, "%s: lab %s is valid: %d nodes, %d links%s\n", l.File, l.Name, len(l.Nodes), len(l.Links), hosts)
			return nil
		},
	}
}
