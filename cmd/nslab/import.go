package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nslab/nslab/topology/importlab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// importOptions is nslab import: the format, the original (a containerlab
// file or a Kathara directory), the lab file to write and its name.
type importOptions struct {
	Format, Source, Out, Name string
	Stdout                    io.Writer
}

func importCommand(run func(context.Context, *importOptions) error) *cli.Command {
	sub := func(format, arg, what, defaultOut string) *cli.Command {
		return &cli.Command{
			Name:      format,
			Usage:     "write an nslab lab file of " + what,
			ArgsUsage: arg,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "the lab `FILE` to write (default: " + defaultOut + ")"},
				&cli.StringFlag{Name: "name", Usage: "the lab's `NAME` (default: the original's, made a valid lab name)"},
			},
			Action: action(func(c *cli.Context) (*importOptions, error) {
				if c.NArg() != 1 {
					return nil, cli.Exit("usage: nslab import "+format+" "+arg, 2)
				}
				return &importOptions{Format: format, Source: c.Args().First(), Out: c.String("out"), Name: c.String("name"), Stdout: c.App.Writer}, nil
			}, or(run, runImport)),
		}
	}
	return &cli.Command{
		Name:  "import",
		Usage: "write an nslab lab file of a containerlab topology or a Kathara lab, taken literally",
		Description: "Nodes, links and shared segments, the files the original binds or copies into nodes (read from\n" +
			"where they are), its exec and startup lines, and FRR where the original runs it. What nslab cannot\n" +
			"carry (images, the management network, kinds other than Linux, resource limits) is listed on\n" +
			"standard output and at the top of the file.\n\n" +
			"Examples:\n" +
			"  nslab import containerlab frr01.clab.yml          # writes frr01.nslab.yaml beside it\n" +
			"  nslab import kathara --out rip.yaml kathara-lab_rip\n" +
			"  nslab deploy frr01.nslab.yaml && nslab check --wait 90s frr01.nslab.yaml",
		Subcommands: []*cli.Command{
			sub("containerlab", "FILE.clab.yml", "a containerlab topology", "NAME.nslab.yaml beside it"),
			sub("kathara", "DIR", "a Kathara lab directory (lab.conf, startup files, machine directories)", "DIR/nslab.yaml"),
		},
	}
}

// runImport reads the original, writes the lab file, and checks that
// nslab reads it back.
func runImport(_ context.Context, o *importOptions) error {
	var l *importlab.Lab
	var err error
	out := o.Out
	if o.Format == "kathara" {
		l, err = importlab.Kathara(o.Source)
		if out == "" {
			out = filepath.Join(o.Source, "nslab.yaml")
		}
	} else {
		l, err = importlab.Containerlab(o.Source)
		if out == "" && l != nil {
			out = filepath.Join(filepath.Dir(o.Source), l.Name+".nslab.yaml")
		}
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", o.Format, err)
	}
	if o.Name != "" {
		l.Name = o.Name
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := l.Write(&buf, filepath.Dir(abs)); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "wrote %s: lab %s, %d nodes, %d links, %d segments\n", out, l.Name, len(l.Nodes), len(l.Links), len(l.Segments))
	for _, d := range l.Dropped {
		fmt.Fprintf(o.Stdout, "not carried: %s\n", d)
	}
	if _, err := spec.ReadFile(out); err != nil {
		return fmt.Errorf("the lab file written does not validate (fix it there): %w", err)
	}
	return nil
}
