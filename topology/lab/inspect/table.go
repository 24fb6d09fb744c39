package inspect

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// table is one of inspect's optional tables: its header is printed with
// its first row, its columns aligned, and a blank line follows it when it
// had any row (a lab without impairments shows no impairment table).
type table struct {
	w      io.Writer
	tw     *tabwriter.Writer
	header string
	shown  bool
}

// newTable is a table of w with header (columns separated by tabs).
func newTable(w io.Writer, header string) *table {
	return &table{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), header: header}
}

// start prints the header, once: the table is shown, rows or not.
func (t *table) start() {
	if !t.shown {
		fmt.Fprintln(t.tw, t.header)
		t.shown = true
	}
}

// row prints one row (format's columns separated by tabs), the header
// before the first.
func (t *table) row(format string, args ...any) {
	t.start()
	fmt.Fprintf(t.tw, format+"\n", args...)
}

// end writes the table out, and a blank line after it when it had rows.
func (t *table) end() {
	t.tw.Flush()
	if t.shown {
		fmt.Fprintln(t.w)
	}
}
