package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyntaxAtTheMistake: five kinds of YAML mistakes, each reported at
// the line and column of the mistake (yaml.v3 names the block around it),
// with the line's text.
func TestSyntaxAtTheMistake(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unclosed brace", "name: x\nnodes:\n  a:\n    interfaces:\n      e0: {addresses: [10.0.0.1/24]\n  b: {}\n", `x.yaml:5:11: YAML syntax: this { is not closed: add } at the end of line (the line: "e0: {addresses: [10.0.0.1/24]"`},
		{"wrong closer", "name: x\nnodes:\n  a:\n    interfaces:\n      e0: {addresses: [10.0.0.1/24}\n", `x.yaml:5:35: YAML syntax: } here closes the [ at column 23: write ]`},
		{"mis-indented key", "name: x\nnodes:\n  a:\n    interfaces:\n      e0: {}\n     routes: []\n", `x.yaml:6:6: YAML syntax: indented 5 spaces, like no key above it (0, 2, 4, 6)`},
		{"tab", "name: x\nnodes:\n  a:\n\tinterfaces: {}\n", `x.yaml:4:1: YAML syntax: a tab in the indentation`},
		{"open quote", "name: \"x\nnodes: {}\n", `x.yaml:1:7: YAML syntax: this " is not closed on its line`},
	} {
		_, err := Parse("x.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestSyntaxSpotQuiet: on every example (valid files, with flow
// collections, block scalars of FRR configuration and comments) the
// second look finds nothing, so it cannot misplace a real error there.
func TestSyntaxSpotQuiet(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if s := syntaxSpot(data); s != nil {
			t.Errorf("%s: %d:%d: %s, in a valid file", f, s.line, s.col, s.what)
		}
	}
}
