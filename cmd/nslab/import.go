package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/importlab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// importOptions is nslab import: the format, the original (a containerlab
// file or a Kathara directory), the lab file to write and its name.
type importOptions struct {
	Format, Source, Out, Name string
	Checkers                  []string // lab checker configurations ("none": not even those found)
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
				&cli.StringSliceFlag{Name: "checker", Usage: "a kathara-lab-checker configuration `FILE` (JSON or YAML) whose expectations become the lab's tests (default: solution/*.json in or beside a Kathara lab's directory; none: --checker none)"},
			},
			Action: action(func(c *cli.Context) (*importOptions, error) {
				if c.NArg() != 1 {
					return nil, cli.Exit("usage: nslab import "+format+" "+arg, 2)
				}
				return &importOptions{Format: format, Source: c.Args().First(), Out: c.String("out"), Name: c.String("name"), Checkers: c.StringSlice("checker"), Stdout: c.App.Writer}, nil
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

// katharaCheckers makes the tests of the lab checker's configurations
// given, or found beside the lab. A configuration that names the lab's
// structure (the topology the exercise asks for) whose machines or
// collision domains differ from lab.conf's gives the lab its topology:
// the tests then ask of the lab what the exercise asks, and fail where
// the student's work is missing, instead of naming machines it lacks.
func katharaCheckers(l *importlab.Lab, o *importOptions) (*importlab.Lab, error) {
	files := o.Checkers
	if slices.Contains(files, "none") {
		return l, nil
	}
	if len(files) == 0 {
		var err error
		if files, err = importlab.FindCheckers(o.Source); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		structure, err := importlab.CheckerStructure(f)
		if err != nil {
			return nil, fmt.Errorf("--checker: %w", err)
		}
		if structure != "" {
			own, _ := os.ReadFile(filepath.Join(o.Source, "lab.conf"))
			theirs, _ := os.ReadFile(structure)
			if !bytes.Equal(bytes.TrimSpace(own), bytes.TrimSpace(theirs)) {
				nl, err := importlab.KatharaWith(o.Source, structure)
				if err != nil {
					return nil, fmt.Errorf("--checker: the structure %s: %w", structure, err)
				}
				nl.Dropped = append(nl.Dropped, fmt.Sprintf("lab.conf: its machines and collision domains (the lab checker's structure %s, the topology the exercise asks for, is the lab's)", besideLab(o.Source, structure)))
				nl.From = fmt.Sprintf("a Kathara lab (its startup files and machine directories) and the topology of %s", besideLab(o.Source, structure))
				l = nl
			}
		}
		if err := l.Checker(f); err != nil {
			return nil, fmt.Errorf("--checker: %w", err)
		}
		l.CheckerFrom[len(l.CheckerFrom)-1] = besideLab(o.Source, f)
	}
	return l, nil
}

// besideLab is path as seen from the lab's directory dir, for what the
// lab file says of it (the same wherever nslab import ran).
func besideLab(dir, path string) string {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	if rel, err := filepath.Rel(ad, ap); err == nil {
		return rel
	}
	return path
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
		if err == nil {
			l, err = katharaCheckers(l, o)
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
	for _, d := range l.Notes {
		fmt.Fprintf(o.Stdout, "otherwise: %s\n", d)
	}
	if len(l.Tests) > 0 {
		fmt.Fprintf(o.Stdout, "tests: %d from %s (nslab test runs them)\n", len(l.Tests), strings.Join(l.CheckerFrom, ", "))
	}
	if _, err := spec.ReadFile(out); err != nil {
		return fmt.Errorf("the lab file written does not validate (fix it there): %w", err)
	}
	return nil
}
