package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

// destroyOptions is nslab destroy: one lab (by name) or every lab, and
// whether to print the script instead (File is the lab's file then, nil
// with --name: the script comes from the state) or wait for the kernel.
type destroyOptions struct {
	Manager *lab.Manager
	All     bool
	Lab     string
	File    *spec.Lab
	DryRun  bool
	Wait    bool
	Out     io.Writer
}

func destroyCommand(run func(context.Context, *destroyOptions) error) *cli.Command {
	flags := []cli.Flag{
		topoFlag(),
		prefixFlag(),
		asDeployedFlag(),
		ownerFlag(),
		&cli.StringFlag{Name: "name", Usage: "lab `NAME`"},
		&cli.BoolFlag{Name: "all", Usage: "every lab nslab deployed on this machine"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the equivalent iproute2 shell script and change nothing"},
		&cli.BoolFlag{Name: "wait", Usage: "return only once the kernel has torn the namespaces down (it does that in the background, after destroy)"},
	}
	return command("destroy", "remove a lab completely (re-runnable; works when the file changed or is gone)", "[FILE]", flags, readDestroy, run, runDestroy)
}

func readDestroy(c *cli.Context) (*destroyOptions, error) {
	o := &destroyOptions{Manager: manager(c), All: c.Bool("all"), DryRun: c.Bool("dry-run"), Wait: c.Bool("wait"), Out: screen(c)}
	if o.All {
		if o.DryRun {
			return nil, cli.Exit("--dry-run takes one lab: -t FILE or --name LAB", 2)
		}
		return o, nil
	}
	var err error
	if o.Lab, err = labName(c); err != nil {
		return nil, err
	}
	if o.DryRun && c.String("name") == "" {
		path, _ := topoPath(c)
		if o.File, err = spec.ReadFile(path); err != nil {
			return nil, err
		}
		if o.File, err = partOf(c, o.File); err != nil { // a host removes its own part
			return nil, err
		}
	}
	return o, nil
}

// runDestroy destroys the lab (or every lab), or prints its script.
func runDestroy(ctx context.Context, o *destroyOptions) error {
	if o.DryRun {
		return printScript(o.Out)(o.Manager.DestroyScript(o.Lab, o.File))
	}
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	t0 := time.Now()
	if err := destroy(o); err != nil {
		return err
	}
	if o.Wait {
		return waitTeardown(ctx, o.Out, t0)
	}
	return nil
}

// destroy destroys the lab the options name, or every lab.
func destroy(o *destroyOptions) error {
	if o.All {
		reps, err := o.Manager.DestroyAll()
		for _, r := range reps {
			r.WriteText(o.Out)
		}
		if len(reps) == 0 && err == nil {
			fmt.Fprintln(o.Out, "no labs deployed")
		}
		return err
	}
	twin := bench.LeftTwin(o.Manager, o.Lab)
	rep, err := o.Manager.Destroy(o.Lab)
	if rep != nil {
		rep.WriteText(o.Out)
	}
	if twin != "" { // a killed duet's twin goes with its lab
		trep, terr := o.Manager.Destroy(twin)
		if trep != nil {
			trep.WriteText(o.Out)
		}
		err = errors.Join(err, terr)
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
	m := manager(c)
	name, l, err := labNameOf(m, path)
	if err != nil || l == nil {
		return name, err
	}
	return identifiedName(c, m, l)
}

// labNameOf is the name of the lab of file path: the lab deployed from
// exactly these contents when a state records them (read and hashed in
// milliseconds, where parsing a file of 10,000 nodes takes a second),
// else the file's name: key. When the name was not found by the
// contents, the lab the file parses to comes back (one with its name,
// path and hash alone when it does not parse), for the caller to compare
// with the lab of that name deployed (identifiedName).
func labNameOf(m *lab.Manager, path string) (string, *spec.Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("read %s: %w (use --name LAB when the file is gone)", path, err)
	}
	if name, ok := m.DeployedFrom(spec.FileSHA(data)); ok {
		return name, nil, nil
	}
	if l, err := spec.Parse(path, data); err == nil {
		return l.Name, l, nil
	}
	var top struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(data, &top); err != nil || strings.TrimSpace(top.Name) == "" {
		return "", nil, fmt.Errorf("%s has no readable name: (use --name LAB)", path)
	}
	// Not a lab (no Source): the lab of its name is compared by hash alone.
	return top.Name, &spec.Lab{Name: top.Name, File: path, SHA256: spec.FileSHA(data)}, nil
}
