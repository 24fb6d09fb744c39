package spec

import (
	"strings"
	"testing"
)

// indentLab is a lab file as people write it, with its lines numbered:
// the mistakes below change one or two of them.
var indentLab = []string{
	"name: x",                                // 1
	"nodes:",                                 // 2
	"  client:",                              // 3
	"    interfaces:",                        // 4
	"      eth0: {addresses: [10.0.0.1/24]}", // 5
	"    routes:",                            // 6
	"      - {to: default, via: 10.0.0.254}", // 7
	"      - {to: 10.9.0.0/24, via: 10.0.0.254}", // 8
	"  router:",            // 9
	"    forwarding: true", // 10
	"    interfaces:",      // 11
	"      lan0: {addresses: [10.0.0.254/24]}", // 12
	"links:", // 13
	"  - endpoints: [client:eth0, router:lan0]", // 14
}

// withLines is indentLab with line n (1-based) replaced by each of text.
func withLines(repl map[int]string) string {
	out := make([]string, len(indentLab))
	for i, l := range indentLab {
		out[i] = l
		if r, ok := repl[i+1]; ok {
			out[i] = r
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// TestIndentMistakes: the indentation mistakes people make, each reported
// at the line the user wrote and the column where its text starts, with
// what to change. (yaml.v3 itself reports the first of them a line late,
// at column 1: "mapping values are not allowed in this context".)
func TestIndentMistakes(t *testing.T) {
	if _, err := Parse("x.yaml", []byte(withLines(nil))); err != nil {
		t.Fatalf("the lab without a mistake: %v", err)
	}
	for _, c := range []struct {
		name string
		repl map[int]string
		want string
	}{
		{"a key with a value one space too few", map[int]string{10: "   forwarding: true"},
			"x.yaml:10:4: YAML syntax: forwarding: is indented 3 spaces, one space fewer than the keys of its block (4, as interfaces: on the next line): indent it 4 spaces"},
		{"a key with a value two spaces too few", map[int]string{10: "  forwarding: true", 11: "    interfaces:"},
			"x.yaml:11:5: YAML syntax: interfaces is indented under forwarding: (line 10), which has a value (true), so nothing can be under it"},
		{"a key one space too many after a key with a value", map[int]string{11: "     interfaces:"},
			"x.yaml:11:6: YAML syntax: interfaces is indented 5 spaces, one space more than forwarding: on the line above (4): indent it 4 spaces, as its siblings are"},
		{"a key under a scalar", map[int]string{11: "      interfaces:", 12: "        lan0: {addresses: [10.0.0.254/24]}"},
			"x.yaml:11:7: YAML syntax: interfaces is indented under forwarding: (line 10), which has a value (true), so nothing can be under it: indent it 4 spaces like forwarding:"},
		{"the first key of a block one space too many", map[int]string{10: "     forwarding: true"},
			"x.yaml:10:6: YAML syntax: forwarding: is indented 5 spaces, one space more than the rest of its block (4, as interfaces: on line 11): indent it 4 spaces"},
		{"the first key of a block, a block itself, one space too few", map[int]string{4: "   interfaces:"},
			"x.yaml:4:4: YAML syntax: interfaces: is indented 3 spaces, one space fewer than the rest of its block (4, as routes: on line 6): indent it 4 spaces"},
		{"a list item between two levels", map[int]string{8: "     - {to: 10.9.0.0/24, via: 10.0.0.254}"},
			"x.yaml:8:6: YAML syntax: indented 5 spaces, like no key above it (0, 2, 4, 6): indent it as its siblings are"},
		{"a list item under the item above", map[int]string{8: "        - {to: 10.9.0.0/24, via: 10.0.0.254}"},
			"x.yaml:8:9: YAML syntax: this list item is indented 8 spaces, 2 spaces more than the item on line 7 (6), which holds a whole value: indent it 6 spaces, as its siblings are"},
		{"a top-level key one space too many", map[int]string{2: " nodes:"},
			"x.yaml:2:2: YAML syntax: nodes is indented 1 space, one space more than name: on the line above (0): indent it 0 spaces, as its siblings are"},
		{"a tab in the indentation", map[int]string{10: "\tforwarding: true"},
			"x.yaml:10:1: YAML syntax: a tab in the indentation: YAML indents with spaces only"},
		{"a node one space too few", map[int]string{9: " router:"},
			"x.yaml:9:2: YAML syntax: indented 1 space, like no key above it (0, 2, 4, 6): indent it as its siblings are"},
	} {
		_, err := Parse("x.yaml", []byte(withLines(c.repl)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.name, err, c.want)
		}
	}
}
