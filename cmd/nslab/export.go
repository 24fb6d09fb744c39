package main

import (
	"fmt"

	"github.com/nslab/nslab/topology/export"
	"github.com/urfave/cli/v2"
)

func exportCommand() *cli.Command {
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
		Action: func(c *cli.Context) error {
			if c.String("format") != "containerlab" {
				return cli.Exit("--format is containerlab", 2)
			}
			l, err := readLab(c)
			if err != nil {
				return err
			}
			topo, left := export.ToContainerlab(l, c.String("image"))
			out, err := topo.Marshal()
			if err != nil {
				return err
			}
			for _, s := range left {
				fmt.Fprintf(c.App.ErrWriter, "nslab export: not exported: %s\n", s)
			}
			_, err = c.App.Writer.Write(out)
			return err
		},
	}
}
