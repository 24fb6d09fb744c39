package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	FRRImage string
	Dir      string // with files: the directory to write the topology and the nodes' files in
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
			prefixFlag(),
			&cli.StringFlag{Name: "format", Value: "containerlab", Usage: "containerlab"},
			&cli.StringFlag{Name: "image", Value: export.DefaultImage, Usage: "container `IMAGE` of every node (it needs iproute2, and tc and nft where the lab uses them)"},
			&cli.StringFlag{Name: "frr-image", Value: export.DefaultFRRImage, Usage: "container `IMAGE` of the nodes that run FRR (with --dir)"},
			&cli.StringFlag{Name: "dir", Usage: "write the topology (NAME.clab.yml) and the nodes' files (files:, FRR's configuration) in `DIR`, the files bound into the containers; without it, nodes with files are not exported whole, and say so"},
		},
		Action: action(func(c *cli.Context) (*exportOptions, error) {
			if c.String("format") != "containerlab" {
				return nil, cli.Exit("--format is containerlab", 2)
			}
			l, err := readLab(c)
			return &exportOptions{Lab: l, Format: c.String("format"), Image: c.String("image"), FRRImage: c.String("frr-image"), Dir: c.String("dir"),
				Out: c.App.Writer, Err: c.App.ErrWriter}, err
		}, or(run, runExport)),
	}
}

// runExport writes the topology on standard output, or with --dir the
// topology and the nodes' files in that directory.
func runExport(_ context.Context, o *exportOptions) error {
	topo, files, left := export.WithFiles(o.Lab, export.Options{Image: o.Image, FRRImage: o.FRRImage, Dir: o.Dir})
	out, err := topo.Marshal()
	if err != nil {
		return err
	}
	for _, s := range left {
		fmt.Fprintf(o.Err, "nslab export: not exported: %s\n", s)
	}
	if o.Dir == "" {
		_, err = o.Out.Write(out)
		return err
	}
	for _, f := range files {
		p := filepath.Join(o.Dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	topoFile := filepath.Join(o.Dir, o.Lab.Name+".clab.yml")
	if err := os.WriteFile(topoFile, out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "wrote %s and %d file(s) bound into its nodes\n", topoFile, len(files))
	return nil
}
