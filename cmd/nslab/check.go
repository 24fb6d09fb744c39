package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nslab/nslab/topology/check"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
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
				printCheckList(w, pairs)
			case "matrix":
				printCheckMatrix(w, l, pairs)
			default:
				return cli.Exit("--format is matrix, list or json", 2)
			}
			summary, bad := checkSummary(pairs)
			if c.String("format") == "json" {
				if bad { // the summary goes where the JSON does not
					return cli.Exit("check failed: "+summary, 1)
				}
				return nil
			}
			printCheckProblems(w, pairs)
			fmt.Fprintln(w, summary)
			if bad {
				return cli.Exit("", 1) // said above, once
			}
			return nil
		},
	}
}

// cell is a pair in the matrix: the RTT when it answered as expected,
// "-" when it did not answer as expected, and BROKEN / UNEXPECTED.
func cell(p check.Pair) string {
	switch {
	case p.Local:
		return "local"
	case p.Broken():
		return "BROKEN"
	case p.Unexpected():
		return "UNEXPECTED " + rtt(p.RTT)
	case p.Answered:
		return rtt(p.RTT)
	case p.Filtered:
		return "filtered"
	}
	return "-"
}

func rtt(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

// printCheckMatrix writes a row per node and a column per address.
func printCheckMatrix(w io.Writer, l *spec.Lab, pairs []check.Pair) {
	addrs := l.Model().Addresses()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head, owners := []string{"FROM \\ TO"}, []string{""}
	for _, a := range addrs {
		head, owners = append(head, a.Addr.String()), append(owners, a.By.String())
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	fmt.Fprintln(tw, strings.Join(owners, "\t"))
	for i, n := range l.Nodes {
		row := []string{n.Name}
		for j := range addrs {
			row = append(row, cell(pairs[i*len(addrs)+j]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w, "\n(round-trip time of the first echo reply; - : no reply, and the routes say none can come; filtered: no reply, and a firewall on the way drops it)")
}

// printCheckList writes one line per pair.
func printCheckList(w io.Writer, pairs []check.Pair) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FROM\tTO\tHELD BY\tROUTES SAY\tRESULT")
	for _, p := range pairs {
		say := "reachable"
		switch {
		case p.Filtered:
			say = "filtered"
		case !p.Expect:
			say = "unreachable"
		}
		got := "no reply"
		if p.Answered {
			got = "reply in " + rtt(p.RTT)
		}
		if p.Local {
			got += " (local)"
		}
		mark := ""
		if !p.OK() {
			mark = "  <- " + map[bool]string{true: "BROKEN", false: "UNEXPECTED"}[p.Broken()]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", p.From, p.To, p.Owner, say, got, mark)
	}
	tw.Flush()
}

// printCheckProblems explains every pair that did not behave as the
// routes say.
func printCheckProblems(w io.Writer, pairs []check.Pair) {
	first := true
	for _, p := range pairs {
		if p.OK() {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		if p.Broken() {
			why := "no reply"
			if p.SendErr != "" {
				why = "the kernel refused to send: " + p.SendErr
			}
			fmt.Fprintf(w, "BROKEN      %s -> %s (%s): %s, but the lab's routes and rules say it answers\n", p.From, p.To, p.Owner, why)
		} else {
			fmt.Fprintf(w, "UNEXPECTED  %s -> %s (%s): replied in %s, but the lab's routes and rules say: %s\n", p.From, p.To, p.Owner, rtt(p.RTT), p.Why)
		}
	}
}

func checkSummary(pairs []check.Pair) (string, bool) {
	var reach, unreach, filtered, broken, unexpected int
	for _, p := range pairs {
		switch {
		case p.Broken():
			broken++
		case p.Unexpected():
			unexpected++
		case p.Answered:
			reach++
		case p.Filtered:
			filtered++
		default:
			unreach++
		}
	}
	s := fmt.Sprintf("%d pairs: %d answered and %d stayed silent as the routes say", len(pairs), reach, unreach)
	if filtered > 0 {
		s += fmt.Sprintf(", %d were dropped by a firewall as its rules say", filtered)
	}
	s += fmt.Sprintf("; %d broken, %d unexpectedly reachable", broken, unexpected)
	return s, broken+unexpected > 0
}
