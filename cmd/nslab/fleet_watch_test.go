package main

import (
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/fleet"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestWithHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`up 1`, `up{host="b"} 1`},
		{`up{} 1`, `up{host="b"} 1`},
		{`rx_total{lab="x",node="r"} 5 1700000000000`, `rx_total{host="b",lab="x",node="r"} 5 1700000000000`},
	} {
		if got := withHost(c.in, "b"); got != c.want {
			t.Errorf("withHost(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMergeMetrics: two hosts' texts with a family in common join into
// one text that Prometheus's parser reads: the family once, with each
// host's samples under its host label.
func TestMergeMetrics(t *testing.T) {
	a := "# HELP rx_total Packets received.\n# TYPE rx_total counter\nrx_total{node=\"client\"} 10\n# HELP only_a A's alone.\n# TYPE only_a gauge\nonly_a 1\n"
	b := "# HELP rx_total Packets received.\n# TYPE rx_total counter\nrx_total{node=\"router\"} 20\nrx_total{node=\"router2\"} 30\n"
	text := mergeMetrics([]fleet.Result{{Host: "a", Stdout: a}, {Host: "b", Stdout: b}})
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("merged text does not parse: %v\n%s", err, text)
	}
	if len(fams) != 2 || strings.Count(text, "# TYPE rx_total") != 1 {
		t.Fatalf("families %d, want 2:\n%s", len(fams), text)
	}
	got := map[string]float64{}
	for _, m := range fams["rx_total"].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + " "
		}
		got[key] = m.GetCounter().GetValue()
	}
	want := map[string]float64{"host=a node=client ": 10, "host=b node=router ": 20, "host=b node=router2 ": 30}
	if len(got) != len(want) {
		t.Fatalf("samples %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("sample %s= %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if m := fams["only_a"].GetMetric(); len(m) != 1 || m[0].GetLabel()[0].GetValue() != "a" {
		t.Errorf("only_a: %v", m)
	}
}
