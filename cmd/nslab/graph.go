package main

import (
	"fmt"

	"github.com/nslab/nslab/topology/graph"
	"github.com/urfave/cli/v2"
)

func graphCommand() *cli.Command {
	return &cli.Command{
		Name:      "graph",
		Usage:     "draw a lab from its file (no deploy needed): text for the terminal, Graphviz dot, or Mermaid",
		ArgsUsage: "[FILE]",
		Flags: []cli.Flag{
			topoFlag(),
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, dot or mermaid"},
		},
		Action: func(c *cli.Context) error {
			l, err := readLab(c)
			if err != nil {
				return err
			}
			g := graph.Build(l)
			var out string
			switch c.String("format") {
			case "text":
				out = fmt.Sprintf("lab %s: %d nodes, %d links\n\n", l.Name, len(l.Nodes), len(l.Links)) + graph.Text(g)
			case "dot":
				out = graph.Dot(g)
			case "mermaid":
				out = graph.Mermaid(g)
			default:
				return cli.Exit("--format is text, dot or mermaid", 2)
			}
			_, err = fmt.Fprint(c.App.Writer, out)
			return err
		},
	}
}
