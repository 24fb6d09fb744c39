package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

func destroyCommand() *cli.Command {
	return &cli.Command{
		Name:      "destroy",
		Usage:     "remove a lab completely (re-runnable; works when the file changed or is gone)",
		ArgsUsage: "[FILE]",
		Flags: []cli.Flag{
			topoFlag(),
			&cli.StringFlag{Name: "name", Usage: "lab `NAME`"},
			&cli.BoolFlag{Name: "all", Usage: "every lab nslab deployed on this machine"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the equivalent iproute2 shell script and change nothing"},
			&cli.BoolFlag{Name: "wait", Usage: "return only once the kernel has torn the namespaces down (it does that in the background, after destroy)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("dry-run") {
				return destroyDryRun(c)
			}
			if err := lab.CheckPrivileges(); err != nil {
				return err
			}
			t0 := time.Now()
			if err := destroy(c, manager(c)); err != nil {
				return err
			}
			if c.Bool("wait") {
				return waitTeardown(c.Context, c.App.Writer, t0)
			}
			return nil
		},
	}
}

// destroy destroys the lab named on the command line, or every lab.
func destroy(c *cli.Context, m *lab.Manager) error {
	if c.Bool("all") {
		reps, err := m.DestroyAll()
		for _, r := range reps {
			printDestroy(c.App.Writer, r)
		}
		if len(reps) == 0 && err == nil {
			fmt.Fprintln(c.App.Writer, "no labs deployed")
		}
		return err
	}
	name, err := labName(c)
	if err != nil {
		return err
	}
	rep, err := m.Destroy(name)
	if rep != nil {
		printDestroy(c.App.Writer, rep)
	}
	return err
}

// waitTeardown waits until the kernel has torn down every namespace
// released so far, and says how long after t0 that was.
func waitTeardown(ctx context.Context, w io.Writer, t0 time.Time) error {
	if err := ns.Settle(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "the kernel finished tearing the namespaces down %s after destroy began\n", time.Since(t0).Round(time.Millisecond))
	return nil
}

func printDestroy(w io.Writer, r *lab.DestroyReport) {
	if !r.Found {
		fmt.Fprintf(w, "lab %s: nothing to destroy\n", r.Lab)
		return
	}
	if r.Damaged != "" {
		fmt.Fprintf(w, "lab %s: its state file was damaged (%s); removing what carries the lab's marker\n", r.Lab, r.Damaged)
	}
	fmt.Fprintf(w, "destroyed lab %s: %d namespaces removed", r.Lab, len(r.Removed))
	if len(r.Gone) > 0 {
		fmt.Fprintf(w, ", %d already gone", len(r.Gone))
	}
	if r.Stopped > 0 {
		fmt.Fprintf(w, ", %d service process(es) stopped", r.Stopped)
	}
	fmt.Fprintln(w)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "  left alone: %s\n", s)
	}
	for _, s := range r.Unproven {
		fmt.Fprintf(w, "  not given back without the state file: %s\n", s)
	}
}

// labName finds the lab a command is about: --name, or the name: in -t FILE.
// A file that no longer validates still gives its name, so a lab can be
// destroyed after its file was edited.
func labName(c *cli.Context) (string, error) {
	if n := c.String("name"); n != "" {
		return n, nil
	}
	path, err := topoPath(c)
	if err != nil {
		return "", cli.Exit("name the lab: -t FILE, --name LAB or --all", 2)
	}
	if l, err := spec.ReadFile(path); err == nil {
		return l.Name, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w (use --name LAB when the file is gone)", path, err)
	}
	var top struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(data, &top); err != nil || strings.TrimSpace(top.Name) == "" {
		return "", fmt.Errorf("%s has no readable name: (use --name LAB)", path)
	}
	return top.Name, nil
}

// destroyDryRun prints the destroy script of the lab named by --name or
// -t FILE: from its state when deployed, else from the file.
func destroyDryRun(c *cli.Context) error {
	if c.Bool("all") {
		return cli.Exit("--dry-run takes one lab: -t FILE or --name LAB", 2)
	}
	name, err := labName(c)
	if err != nil {
		return err
	}
	var file *spec.Lab
	if c.String("name") == "" {
		path, _ := topoPath(c)
		if file, err = spec.ReadFile(path); err != nil {
			return err
		}
		if file, err = partOf(c, file); err != nil { // a host removes its own part
			return err
		}
	}
	script, err := manager(c).DestroyScript(name, file)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(c.App.Writer, script)
	return err
}
