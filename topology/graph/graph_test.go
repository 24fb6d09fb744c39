package graph

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// labs are every example plus testdata/odd.yaml, which has what the
// examples lack: a same-column link, a link within one node, a node with
// several links to the next column, and two unconnected pieces.
func labs(t *testing.T) map[string]*spec.Lab {
	t.Helper()
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	files = append(files, "testdata/odd.yaml")
	out := map[string]*spec.Lab{}
	for _, f := range files {
		l, err := spec.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = l
	}
	return out
}

func TestGolden(t *testing.T) {
	formats := map[string]func(*Graph) string{"txt": Text, "dot": Dot, "mmd": Mermaid}
	for name, l := range labs(t) {
		for ext, render := range formats {
			got := render(Build(l))
			golden := filepath.Join("testdata", name+"."+ext)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", name+"."+ext, golden, got)
			}
		}
	}
}

// TestDotParses feeds every dot output to Graphviz (make test installs it).
func TestDotParses(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil && testing.Short() {
		t.Skip("Graphviz's dot is not installed: the unit suite needs no Debian package; make test-root runs this after make deps installs it")
	}
	if err != nil {
		t.Fatal("Graphviz's dot is not installed: apt-get install graphviz (make deps does)")
	}
	for name, l := range labs(t) {
		cmd := exec.Command(dot, "-Tsvg", "-o", os.DevNull)
		cmd.Stdin = strings.NewReader(Dot(Build(l)))
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("%s: dot: %v\n%s", name, err, out)
		}
	}
}

// TestTextDrawsEveryLink counts the places where lines leave a box
// border: two per link, whatever the layout.
func TestTextDrawsEveryLink(t *testing.T) {
	for name, l := range labs(t) {
		g := Build(l)
		txt := Text(g)
		attach := strings.Count(txt, "├─") + strings.Count(txt, "─┤")
		if want := 2 * len(g.Edges); attach != want {
			t.Errorf("%s: %d line ends at box borders, want %d:\n%s", name, attach, want, txt)
		}
		for _, b := range g.Boxes {
			if !strings.Contains(txt, "─ "+b.FullTitle()+" ─") {
				t.Errorf("%s: box %s is not drawn", name, b.Title)
			}
		}
	}
}

func TestChainSummary(t *testing.T) {
	ls := labs(t)
	for name, want := range map[string]string{
		"client-router-server": "ns1 -> ns2 (router) -> ns3",
		"two-routers":          "client -> r1 (router) -> r2 (router) -> server",
		"odd":                  "",
	} {
		txt := Text(Build(ls[name]))
		if want == "" {
			if strings.Contains(txt, " -> ") {
				t.Errorf("%s is no chain, but got a chain line:\n%s", name, txt)
			}
		} else if !strings.HasSuffix(txt, "\n"+want+"\n") {
			t.Errorf("%s: want the line %q under:\n%s", name, want, txt)
		}
	}
}

// TestImpairmentLabels: every format says what an impaired link does, for
// each end that impairs, and a plain link gets no label.
func TestImpairmentLabels(t *testing.T) {
	l, err := spec.Parse("x.yaml", []byte(`name: x
nodes:
  a: {interfaces: {e0: {addresses: [10.0.0.1/24], impair: {delay: 20ms, rate: 10Mbit}}, e1: {addresses: [10.0.1.1/24]}}}
  b: {interfaces: {e0: {addresses: [10.0.0.2/24], impair: {loss: 1%}}}}
  c: {interfaces: {e0: {addresses: [10.0.1.2/24]}}}
links:
  - endpoints: [a:e0, b:e0]
  - endpoints: [a:e1, c:e0]
`))
	if err != nil {
		t.Fatal(err)
	}
	g := Build(l)
	want := "a:e0 sends: delay 20ms rate 10Mbit; b:e0 sends: loss 1%"
	if g.Edges[0].Label != want || g.Edges[1].Label != "" {
		t.Fatalf("labels %q, %q", g.Edges[0].Label, g.Edges[1].Label)
	}
	for name, out := range map[string]string{"text": Text(g), "dot": Dot(g), "mermaid": Mermaid(g)} {
		if strings.Count(out, "sends:") != 2 || !strings.Contains(out, "delay 20ms rate 10Mbit") {
			t.Errorf("%s does not label the impaired link:\n%s", name, out)
		}
	}
}
