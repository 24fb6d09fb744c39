package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProgramsLinkNoTestCode: no program of the module links the testing
// package or a test helper (internal/labtest), and no package other than
// the test helpers imports testing outside its _test.go files.
func TestProgramsLinkNoTestCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-tags", "urfave_cli_no_docs",
		"../nslab", "../nslab-plot", "../nslab-capture", "../nslab-web", "../nslab-bench-topology", "../nslab-bench-forwarding", "../nslab-bench-engine", "../nslab-vmtest", "../nslab-kube").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "testing" || strings.Contains(p, "labtest") {
			t.Errorf("a program links %s", p)
		}
	}
	out, err = exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == "testing" && !strings.Contains(f[0], "/internal/labtest") {
				t.Errorf("%s imports testing", f[0])
			}
		}
	}
}

// TestNslabLinksNoSlowLibrary: the libraries whose initialisation costs
// milliseconds at every start (gonum/plot's fonts, gopacket's layer
// tables, the Prometheus client's registry and protobuf, client-go's
// API scheme) stay in the helper programs, out of nslab.
func TestNslabLinksNoSlowLibrary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-tags", "urfave_cli_no_docs", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "gonum.org/") || strings.HasPrefix(p, "github.com/google/gopacket") || strings.HasPrefix(p, "github.com/prometheus/") || strings.HasPrefix(p, "k8s.io/") {
			t.Errorf("nslab links %s", p)
		}
	}
}
