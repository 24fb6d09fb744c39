package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/nslab/nslab/topology/lab"
	"github.com/urfave/cli/v2"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show a deployed lab as the kernel sees it, or list deployed labs",
		ArgsUsage: "[FILE]",
		Flags: []cli.Flag{
			topoFlag(),
			&cli.StringFlag{Name: "name", Usage: "lab `NAME`"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table or json"},
		},
		Action: func(c *cli.Context) error {
			format := c.String("format")
			if format != "table" && format != "json" {
				return cli.Exit(fmt.Sprintf("--format %s: use table or json", format), 2)
			}
			if err := lab.CheckPrivileges(); err != nil {
				return err
			}
			m := manager(c)
			if c.String("name") == "" && c.String("topo") == "" && c.NArg() == 0 {
				labs, err := m.List()
				if err != nil {
					return err
				}
				if format == "json" {
					return writeJSON(c.App.Writer, labs)
				}
				lab.WriteSummaries(c.App.Writer, labs)
				return nil
			}
			name, err := labName(c)
			if err != nil {
				return err
			}
			info, err := m.Inspect(name)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(c.App.Writer, info)
			}
			info.WriteTable(c.App.Writer)
			return nil
		},
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
