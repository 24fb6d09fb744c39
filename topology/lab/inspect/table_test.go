package inspect

import (
	"bytes"
	"testing"
)

// TestTable: a table without rows prints nothing; with rows, the header
// once, aligned columns and a blank line after; start shows the header
// alone.
func TestTable(t *testing.T) {
	var b bytes.Buffer
	newTable(&b, "A\tB").end()
	if b.Len() != 0 {
		t.Errorf("a table without rows printed %q", b.String())
	}
	tb := newTable(&b, "NODE\tVALUE")
	tb.row("%s\t%d", "r1", 1)
	tb.row("%s\t%d", "server", 22)
	tb.end()
	if want := "NODE    VALUE\nr1      1\nserver  22\n\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
	b.Reset()
	tb = newTable(&b, "NODE\tVALUE")
	tb.start()
	tb.start()
	tb.end()
	if want := "NODE  VALUE\n\n"; b.String() != want {
		t.Errorf("header alone: %q, want %q", b.String(), want)
	}
}

// TestPrintImpairmentsHeaderAlone: an impaired interface whose qdiscs the
// kernel no longer has still shows the table's header (as before the
// tables shared their printer), and none impaired shows nothing.
func TestPrintImpairmentsHeaderAlone(t *testing.T) {
	var b bytes.Buffer
	printImpairments(&b, &LabInfo{Nodes: []NodeInfo{{Node: "r1", Interfaces: []IfInfo{{Name: "eth0"}}}}})
	if b.Len() != 0 {
		t.Errorf("no impairment printed %q", b.String())
	}
	printImpairments(&b, &LabInfo{Nodes: []NodeInfo{{Node: "r1", Interfaces: []IfInfo{{Name: "eth0", Impairment: "delay 10ms"}}}}})
	if want := "NODE  INTERFACE  IMPAIRMENT (what it sends)  QDISC  SENT  DROPPED  OVERLIMITS  REQUEUES  BACKLOG\n\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}
