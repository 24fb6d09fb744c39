package main

import (
	"fmt"
	"strings"

	"github.com/nslab/nslab/topology/generate"
	"github.com/urfave/cli/v2"
)

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:      "generate",
		Usage:     "write a lab file of a common shape and any size to standard output",
		ArgsUsage: strings.Join(generate.Kinds, "|"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "n", Value: 3, Usage: "nodes (chain, tree, mesh) or leaves (star, clos)"},
			&cli.IntFlag{Name: "spines", Value: 2, Usage: "clos: spine nodes"},
			&cli.BoolFlag{Name: "routes", Usage: "add the routes and forwarding that make every address reachable from every node"},
			&cli.StringFlag{Name: "name", Usage: "lab name (default: the shape)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit(fmt.Sprintf("usage: nslab generate %s --n N [--routes] > lab.yaml", strings.Join(generate.Kinds, "|")), 2)
			}
			src, err := generate.Lab(generate.Options{Kind: c.Args().First(), N: c.Int("n"), Spines: c.Int("spines"), Routes: c.Bool("routes"), Name: c.String("name")})
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			_, err = fmt.Fprint(c.App.Writer, src)
			return err
		},
	}
}
