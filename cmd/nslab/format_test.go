package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
)

// TestPrivilegedFormatJSON: every verb with --format json, on a deployed
// lab, prints one JSON document on standard output and nothing else
// there: inspect, path, check, top --once, bench (with --out twice) and
// compare of its two files.
func TestPrivilegedFormatJSON(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	if code, _, errOut := c.run("deploy", file); code != 0 {
		t.Fatalf("deploy: %d %s", code, errOut)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	for _, args := range [][]string{
		{"inspect", "--format", "json", file},
		{"path", "--format", "json", file, "ns1", "10.0.2.1"},
		{"check", "--format", "json", file},
		{"top", "--once", "--format", "json", name},
		{"bench", "-q", "--format", "json", "--count", "2000", "--rate", "20kpps", "--out", a, file},
		{"bench", "-q", "--format", "json", "--count", "2000", "--rate", "20kpps", "--out", b, file},
		{"compare", "--format", "json", a, b},
	} {
		code, out, errOut := c.run(args...)
		if code != 0 || !json.Valid([]byte(out)) || !strings.HasPrefix(strings.TrimSpace(out), "{") && !strings.HasPrefix(strings.TrimSpace(out), "[") {
			t.Errorf("nslab %s: exit %d, stdout not one JSON document: %.300q (stderr %.300q)", strings.Join(args, " "), code, out, errOut)
		}
	}
}
