package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nslab/nslab/topology/check"
	"github.com/nslab/nslab/topology/lab"
	"github.com/urfave/cli/v2"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "ping every address of a deployed lab from every node and compare with what its routes, NAT and firewalls say",
		ArgsUsage: "[FILE]",
		Flags: []cli.Flag{
			hostFlag(),
			topoFlag(),
			&cli.DurationFlag{Name: "timeout", Value: time.Second, Usage: "wait per echo"},
			&cli.IntFlag{Name: "tries", Value: 2, Usage: "echoes per pair until one answers"},
			&cli.StringFlag{Name: "format", Value: "matrix", Usage: "matrix, list or json"},
		},
		Action: func(c *cli.Context) error {
			l, err := readPart(c)
			if err != nil {
				return err
			}
			if err := lab.CheckPrivileges(); err != nil {
				return err
			}
			r, err := manager(c).Open(l)
			if err != nil {
				return fmt.Errorf("lab %s is not deployed (or not completely): nslab deploy -t %s first: %w", l.Name, l.File, err)
			}
			defer r.Close()
			pairs, err := check.Run(c.Context, r, check.Options{Timeout: c.Duration("timeout"), Tries: c.Int("tries")})
			if err != nil {
				return err
			}
			w := c.App.Writer
			switch c.String("format") {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(pairs); err != nil {
					return err
				}
			case "list":
				pairs.WriteList(w)
			case "matrix":
				pairs.WriteMatrix(w, l)
			default:
				return cli.Exit("--format is matrix, list or json", 2)
			}
			summary, bad := pairs.Summary()
			if c.String("format") == "json" {
				if bad { // the summary goes where the JSON does not
					return cli.Exit("check failed: "+summary, 1)
				}
				return nil
			}
			pairs.WriteProblems(w)
			fmt.Fprintln(w, summary)
			if bad {
				return cli.Exit("", 1) // said above, once
			}
			return nil
		},
	}
}
