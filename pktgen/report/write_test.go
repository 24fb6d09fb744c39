package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestCostColumns: markdown and CSV carry the router's cost per packet
// and its relative cost beside the rates, or say none was measured.
func TestCostColumns(t *testing.T) {
	measured := &Report{Frame: 64, Cost: &RouterCost{Packets: 10, NsPerPacket: 1367.4, RelativeCost: 1.1236}}
	unmeasured := &Report{Frame: 128}
	for _, c := range []struct{ format, head, row, none string }{
		{"markdown", "| unaccounted | router ns/packet | relative cost |", "| 0 | 1367 | 1.124 | - |", "| 0 | - | - | - | - |"},
		{"csv", ",router_ns_per_packet,router_relative_cost\n", ",1367,1.124\n", ",,\n"},
	} {
		var b bytes.Buffer
		if err := Write(&b, c.format, []*Report{measured, unmeasured}); err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(b.String(), "\n")
		if !strings.Contains(lines[0], c.head) {
			t.Errorf("%s head %q lacks %q", c.format, lines[0], c.head)
		}
		if !strings.Contains(b.String(), c.row) || !strings.Contains(lines[len(lines)-2], c.none) {
			t.Errorf("%s rows lack %q, or the unmeasured one %q:\n%s", c.format, c.row, c.none, b.String())
		}
		if c.format == "csv" && strings.Count(lines[len(lines)-2], ",") != strings.Count(lines[0], ",") {
			t.Errorf("csv: the unmeasured row has other columns than the head:\n%s", b.String())
		}
	}
}
