package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/urfave/cli/v2"
)

// inspectOptions is nslab inspect: one lab as the kernel has it, or (Lab
// "") the list of labs, as a table or JSON.
type inspectOptions struct {
	Manager *lab.Manager
	Lab     string
	Format  string // table or json
	Out     io.Writer
}

func inspectCommand(run func(context.Context, *inspectOptions) error) *cli.Command {
	flags := []cli.Flag{
		topoFlag(),
		prefixFlag(),
		asDeployedFlag(),
		&cli.StringFlag{Name: "name", Usage: "lab `NAME`"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table or json"},
	}
	return command("inspect", "show a deployed lab as the kernel sees it, or list deployed labs", "[FILE]", flags, func(c *cli.Context) (*inspectOptions, error) {
		o := &inspectOptions{Manager: manager(c), Format: c.String("format"), Out: c.App.Writer}
		if o.Format != "table" && o.Format != "json" {
			return nil, cli.Exit(fmt.Sprintf("--format %s: use table or json", o.Format), 2)
		}
		if c.String("name") == "" && c.String("topo") == "" && c.NArg() == 0 {
			return o, nil
		}
		var err error
		o.Lab, err = labName(c)
		return o, err
	}, run, runInspect)
}

func runInspect(_ context.Context, o *inspectOptions) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	if o.Lab == "" {
		labs, err := o.Manager.Store().List()
		if err != nil {
			return err
		}
		if o.Format == "json" {
			return writeJSON(o.Out, labs)
		}
		inspect.WriteSummaries(o.Out, labs)
		return nil
	}
	info, err := o.Manager.Store().Inspect(o.Lab)
	if err != nil {
		return err
	}
	if o.Format == "json" {
		return writeJSON(o.Out, info)
	}
	info.WriteTable(o.Out)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
