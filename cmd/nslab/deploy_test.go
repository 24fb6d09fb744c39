package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/generate"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// generated is a chain of n nodes under a random name, its namespaces
// prefixed with it, read as deploy reads it.
func generated(t *testing.T, n int) *spec.Lab {
	t.Helper()
	name := labtest.Name("g")
	src, err := generate.Lab(generate.Options{Kind: "chain", N: n, Routes: true, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	src = strings.Replace(src, "\nname: "+name+"\n", "\nname: "+name+"\nprefix: "+name+"-\n", 1)
	file := filepath.Join(t.TempDir(), "chain.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := spec.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestPrivilegedDeployProgress: a deploy of more than 100 nodes shows its
// steps on a terminal, the line gone at the end; of 100 nodes, or with
// -q, nothing; the deployed line goes to the output as always.
func TestPrivilegedDeployProgress(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	for _, c := range []struct {
		nodes int
		quiet bool
		shown bool
	}{{101, false, true}, {101, true, false}, {100, false, false}} {
		term, screen := openPTY(t)
		m := &lab.Manager{StateDir: t.TempDir()}
		l := generated(t, c.nodes)
		var out bytes.Buffer
		err := runDeploy(context.Background(), &deployOptions{Lab: l, Manager: m, Out: &out, ErrOut: term, Quiet: c.quiet})
		seen := readScreen(t, screen)
		if err == nil {
			if _, err := m.Destroy(l.Name); err != nil {
				t.Error(err)
			}
		}
		if err != nil || !strings.HasPrefix(out.String(), "deployed lab "+l.Name) {
			t.Fatalf("%d nodes: %v, %q", c.nodes, err, out.String())
		}
		shown := strings.Contains(seen, "deploying lab "+l.Name) && strings.Contains(seen, "step ")
		if shown != c.shown || (c.shown && !strings.HasSuffix(seen, "\r\x1b[K")) {
			t.Errorf("%d nodes, quiet %v: the terminal saw %q", c.nodes, c.quiet, seen)
		}
		if m.Progress != nil {
			t.Errorf("the manager keeps the progress function after the deploy")
		}
	}
}
