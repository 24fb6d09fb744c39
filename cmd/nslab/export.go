package main

import (
	"context"
	"fmt"
	"io"

	"github.com/nslab/nslab/topology/export"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// exportOptions is nslab export: the lab, the format (containerlab) and
// its nodes' image; what cannot be exported is said on Err.
type exportOptions struct {
	Lab      *spec.Lab
	Format   string
	Image    string
	Out, Err io.Writer
}

func exportCommand(run func(context.Context, *exportOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write the lab in another tool's format (no deploy needed): containerlab, for many machines or Kubernetes",
		ArgsUsage: "[FILE]",
		Description: "The containerlab topology has the same nodes (kind linux, one image) and links (with the lab's MACs\n" +
			"and MTUs); what nslab sets inside each node becomes its exec lines. What it cannot carry (CPU\n" +
			"placement, SR-IOV VFs, traffic runs) is named on standard error.",
		Flags: []cli.Flag{
			topoFlag(),
			&cli.StringFlag{Name: "format", Value: "containerlab", Usage: "containerlab"},
			&cli.StringFlag{Name: "image", Value: export.DefaultImage, Usage: "container `IMAGE` of every node (it needs iproute2, and tc and nft where the lab uses them)"},
		},
		Action: action(func(c *cli.Context) (*exportOptions, error) {
			if c.String("format") != "containerlab" {
				return nil, cli.Exit("--format is containerlab", 2)
			}
			l, err := readLab(c)
			return &exportOptions{Lab: l, Format: c.String("format"), Image: c.String("image"), Out: c.App.Writer, Err: c.App.ErrWriter}, err
		}, or(run, runExport)),
	}
}

func runExport(_ context.Context, o *exportOptions) error {
	topo, left := export.ToContainerlab(o.Lab, o.Image)
	out, err := topo.Marshal()
	if err != nil {
		return err
	}
	for _, s := range left {
		fmt.Fprintf(o.Err, "nslab export: not exported: %s\n", s)
	}
	_, err = o.Out.Write(out)
	return err
}
