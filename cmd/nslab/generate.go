package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nslab/nslab/topology/generate"
	"github.com/urfave/cli/v2"
)

// generateOptions is nslab generate: the shape and size of the lab file.
type generateOptions struct {
	generate.Options
	Out io.Writer
}

func generateCommand(run func(context.Context, *generateOptions) error) *cli.Command {
	flags := []cli.Flag{
		&cli.IntFlag{Name: "n", Value: 3, Usage: "nodes (chain, tree, mesh) or leaves (star, clos)"},
		&cli.IntFlag{Name: "spines", Value: 2, Usage: "clos: spine nodes"},
		&cli.BoolFlag{Name: "routes", Usage: "add the routes and forwarding that make every address reachable from every node"},
		&cli.StringFlag{Name: "routing", Usage: "run a routing `PROTOCOL` on every node instead of static routes: ospf (FRR's ospfd on every link; every node forwards)"},
		&cli.StringFlag{Name: "name", Usage: "lab name (default: the shape)"},
	}
	return command("generate", "write a lab file of a common shape and any size to standard output", strings.Join(generate.Kinds, "|"), flags, func(c *cli.Context) (*generateOptions, error) {
		if c.NArg() != 1 {
			return nil, cli.Exit(fmt.Sprintf("usage: nslab generate %s --n N [--routes | --routing ospf] > lab.yaml", strings.Join(generate.Kinds, "|")), 2)
		}
		o := generate.Options{Kind: c.Args().First(), N: c.Int("n"), Spines: c.Int("spines"), Routes: c.Bool("routes"), Routing: c.String("routing"), Name: c.String("name")}
		o.Origin = generateLine(o)
		return &generateOptions{Options: o, Out: c.App.Writer}, nil
	}, run, runGenerate)
}

func runGenerate(_ context.Context, o *generateOptions) error {
	src, err := generate.Lab(o.Options)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	_, err = fmt.Fprint(o.Out, src)
	return err
}

// generateLine is the command line that generates o's lab, written at the
// top of the file it makes.
func generateLine(o generate.Options) string {
	line := fmt.Sprintf("nslab generate %s --n %d", o.Kind, o.N)
	if o.Kind == "clos" {
		line += fmt.Sprintf(" --spines %d", o.Spines)
	}
	if o.Routes {
		line += " --routes"
	}
	if o.Routing != "" {
		line += " --routing " + o.Routing
	}
	return line
}
