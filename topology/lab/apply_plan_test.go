package lab

import (
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

// TestPlanApply: the plans apply makes from a file and an edit of it
// (pure: nothing runs). A new node is made with its link and what needs
// it; a changed exec line rebuilds its node, and so remakes its links'
// other ends' addresses and routes; an address moved is taken back and
// made; the same file is nothing to do.
func TestPlanApply(t *testing.T) {
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(s string) *spec.Lab {
		t.Helper()
		l, err := spec.Parse("crs.yaml", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	base := string(data)
	names := func(steps []Step) string {
		var out []string
		for _, s := range steps {
			out = append(out, s.Name)
		}
		return strings.Join(out, "; ")
	}
	for _, c := range []struct {
		name, edited string
		from         string   // "": the example
		undo, do     []string // each must be among the steps' names
		noUndo, noDo bool
		rebuilt      string
	}{
		{name: "the same file", edited: base, noUndo: true, noDo: true},
		{name: "an address added",
			edited: strings.Replace(base, "veth1: {addresses: [10.0.1.1/24]}", "veth1: {addresses: [10.0.1.1/24, 10.0.9.1/24]}", 1),
			do:     []string{"add address 10.0.9.1/24 to ns1:veth1"}, noUndo: true},
		{name: "an address moved",
			edited: strings.Replace(base, "veth1: {addresses: [10.0.1.1/24]}", "veth1: {addresses: [10.0.1.2/24]}", 1),
			undo:   []string{"add address 10.0.1.1/24 to ns1:veth1"}, do: []string{"add address 10.0.1.2/24 to ns1:veth1"}},
		{name: "an exec line changed rebuilds its node", from: strings.Replace(base, "  ns3:\n", "  ns3:\n    exec: [\"echo a\"]\n", 1),
			edited:  strings.Replace(base, "  ns3:\n", "  ns3:\n    exec: [\"echo b\"]\n", 1),
			undo:    []string{"create namespace ns3", "add address 10.0.2.254/24 to ns2:veth2"},
			do:      []string{"create namespace ns3", "create veth pair ns2:veth2 <-> ns3:veth2-peer", "add address 10.0.2.254/24 to ns2:veth2", "add route default via 10.0.2.254 in ns3", "run in ns3: echo b"},
			rebuilt: "ns3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			from := c.from
			if from == "" {
				from = base
			}
			p, err := PlanApply(parse(from), parse(c.edited), nil)
			if err != nil {
				t.Fatal(err)
			}
			undo, do := names(p.Undo), names(p.Do)
			if c.noUndo && len(p.Undo) > 0 || c.noDo && len(p.Do) > 0 {
				t.Errorf("undo %q, do %q: want nothing", undo, do)
			}
			for _, w := range c.undo {
				if !strings.Contains(undo, w) {
					t.Errorf("taken back: %q, want %q among them", undo, w)
				}
			}
			for _, w := range c.do {
				if !strings.Contains(do, w) {
					t.Errorf("made: %q, want %q among them", do, w)
				}
			}
			if got := strings.Join(p.Rebuilt, ","); got != c.rebuilt {
				t.Errorf("rebuilt %q, want %q", got, c.rebuilt)
			}
		})
	}
}
