package check

// What check prints: the pairs as a matrix or a list, the problems, and a
// summary.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nslab/nslab/internal/fold"
	"github.com/nslab/nslab/topology/spec"
)

// Pairs are the results of a check, one per pair of node and address;
// they render themselves (cmd chooses which form).
type Pairs []Pair

// cell is a pair in the matrix: the RTT when it answered as expected,
// "-" when it did not answer as expected, and BROKEN / UNEXPECTED.
func cell(p Pair) string {
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

// WriteMatrix writes a row per node and a column per address, then the
// pairs sent from an interface's address as a list. A matrix wider than
// fold.Width is written in blocks of columns, each with the rows' names,
// so that no line is wider than a terminal.
func (pairs Pairs) WriteMatrix(w io.Writer, l *spec.Lab) {
	addrs := l.Model().Addresses()
	head, owners := []string{"FROM \\ TO"}, []string{""}
	for _, a := range addrs {
		head, owners = append(head, a.Addr.String()), append(owners, a.By.String())
	}
	rows := [][]string{head, owners}
	i := 0
	for _, n := range l.Nodes {
		if n.Segment {
			continue // no row: Expected gives it no pairs
		}
		row := []string{n.Name}
		for j := range addrs {
			row = append(row, cell(pairs[i*len(addrs)+j]))
		}
		i++
		rows = append(rows, row)
	}
	for k, cols := range columnBlocks(rows, fold.Width) {
		if k > 0 {
			fmt.Fprintln(w)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			line := []string{r[0]}
			for _, c := range cols {
				line = append(line, r[c])
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\n(round-trip time of the first echo reply; - : no reply, and the routes say none can come;")
	fmt.Fprintln(w, " filtered: no reply, and a firewall on the way drops it)")
	if grid := i * len(addrs); grid < len(pairs) {
		fmt.Fprintln(w, "\nfrom an interface's address, as the file's expect: lines FROM node:interface say:")
		pairs[grid:].WriteList(w)
	}
}

// columnBlocks splits the columns after the first (the rows' names) into
// runs whose lines, with the first column and tabwriter's padding of 2,
// fit in width; a column wider than that alone is a block of its own.
func columnBlocks(rows [][]string, width int) [][]int {
	if len(rows) == 0 {
		return nil
	}
	wide := make([]int, len(rows[0]))
	for _, r := range rows {
		for c, v := range r {
			wide[c] = max(wide[c], utf8.RuneCountInString(v))
		}
	}
	var blocks [][]int
	var cur []int
	used := wide[0]
	for c := 1; c < len(wide); c++ {
		if len(cur) > 0 && used+2+wide[c] > width {
			blocks, cur, used = append(blocks, cur), nil, wide[0]
		}
		cur, used = append(cur, c), used+2+wide[c]
	}
	return append(blocks, cur)
}

// WriteList writes one line per pair.
func (pairs Pairs) WriteList(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FROM\tTO\tHELD BY\tEXPECTED\tRESULT") // by the routes, or by an expect: line (Why)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", p.Sender(), p.To, p.Owner, say, got, mark)
	}
	tw.Flush()
}

// WriteProblems explains every pair that did not behave as the
// routes say.
func (pairs Pairs) WriteProblems(w io.Writer) {
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
			fmt.Fprintf(w, "BROKEN      %s -> %s (%s): %s, but %s\n", p.Sender(), p.To, p.Owner, p.failure(), p.reason())
		} else {
			fmt.Fprintf(w, "UNEXPECTED  %s -> %s (%s): replied in %s, but the lab's routes and rules say: %s\n", p.Sender(), p.To, p.Owner, rtt(p.RTT), p.Why)
		}
	}
}

// failure says how a pair that did not answer failed.
func (p Pair) failure() string {
	switch {
	case p.FromInterface != "" && !p.Source.IsValid():
		return "not sent: " + p.SendErr
	case p.SendErr != "":
		return "the kernel refused to send: " + p.SendErr
	}
	return "no reply"
}

// reason is why a pair was expected to answer: the file's expect: line,
// the daemons' routes still awaited, or the lab's routes and rules.
func (p Pair) reason() string {
	if p.Why != "" {
		return p.Why
	}
	return "the lab's routes and rules say it answers"
}

// Summary counts the pairs by outcome in one sentence, and reports
// whether any is broken or unexpectedly reachable, or there was nothing
// to check.
func (pairs Pairs) Summary() (string, bool) {
	if len(pairs) == 0 {
		return "0 pairs: no node has an address to check, in the file or in its kernel; nothing was checked", true
	}
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
