package main

import (
	"context"
	"fmt"
	"io"

	"github.com/nslab/nslab/topology/graph"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// graphOptions is nslab graph: the lab and the drawing's format.
type graphOptions struct {
	Lab    *spec.Lab
	Format string // text, dot or mermaid
	Out    io.Writer
}

func graphCommand(run func(context.Context, *graphOptions) error) *cli.Command {
	flags := []cli.Flag{
		topoFlag(),
		prefixFlag(),
		&cli.StringFlag{Name: "format", Value: "text", Usage: "text, dot or mermaid"},
	}
	return command("graph", "draw a lab from its file (no deploy needed): text for the terminal, Graphviz dot, or Mermaid", "[FILE]", flags, func(c *cli.Context) (*graphOptions, error) {
		l, err := readLab(c)
		return &graphOptions{Lab: l, Format: c.String("format"), Out: c.App.Writer}, err
	}, run, runGraph)
}

func runGraph(_ context.Context, o *graphOptions) error {
	g := graph.Build(o.Lab)
	var out string
	switch o.Format {
	case "text":
		out = fmt.Sprintf("lab %s: %d nodes, %d links\n\n", o.Lab.Name, len(o.Lab.Nodes), len(o.Lab.Links)) + graph.Text(g)
	case "dot":
		out = graph.Dot(g)
	case "mermaid":
		out = graph.Mermaid(g)
	default:
		return cli.Exit("--format is text, dot or mermaid", 2)
	}
	_, err := fmt.Fprint(o.Out, out)
	return err
}
