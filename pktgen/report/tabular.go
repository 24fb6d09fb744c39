package report

import (
	"io"
	"strings"
	"text/tabwriter"
)

// tabular writes titled tables either as aligned text for a terminal or
// as markdown, from the same calls: a result type that renders through it
// has one layout in both formats.
type tabular struct {
	ew       *errWriter
	markdown bool
	tw       *tabwriter.Writer
}

func newTabular(w io.Writer, format string) *tabular {
	return &tabular{ew: &errWriter{w: w}, markdown: format == "markdown"}
}

// title opens the output.
func (t *tabular) title(s string) {
	if t.markdown {
		t.ew.printf("### %s\n", s)
		return
	}
	t.ew.printf("%s\n", s)
}

// section ends the table before it and names the next.
func (t *tabular) section(s string) {
	t.flush()
	if t.markdown {
		t.ew.printf("\n#### %s\n\n", s)
		return
	}
	t.ew.printf("\n%s\n", s)
}

// header starts a table with these columns.
func (t *tabular) header(cols ...string) {
	if t.markdown {
		t.ew.printf("| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
		return
	}
	t.tw = tabwriter.NewWriter(t.ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	t.row(cols...)
}

// row is one row of the table.
func (t *tabular) row(cells ...string) {
	if t.markdown {
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", "/")
		}
		t.ew.printf("| %s |\n", strings.Join(cells, " | "))
		return
	}
	if t.tw != nil {
		_, _ = io.WriteString(t.tw, "  "+strings.Join(cells, "\t")+"\t\n") // the tabwriter keeps nothing: errWriter below it does
	}
}

func (t *tabular) flush() {
	if t.tw != nil {
		t.tw.Flush()
		t.tw = nil
	}
}

// done ends the output and returns the first write error.
func (t *tabular) done() error {
	t.flush()
	return t.ew.err
}
