package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPagesLint writes the man pages and lints them with mandoc
// (Debian's mandoc, which make test installs): no warning.
func TestManPagesLint(t *testing.T) {
	if _, err := exec.LookPath("mandoc"); err != nil {
		t.Skip("mandoc is not installed (make test installs it)")
	}
	dir := t.TempDir()
	if err := newApp(commands()...).Run([]string{"nslab", "gendocs", "--man", dir}); err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(pages) != len(visible(newApp(commands()...)))+2 {
		t.Fatalf("%d pages for %d verbs", len(pages), len(visible(newApp(commands()...))))
	}
	out, err := exec.Command("mandoc", append([]string{"-Tlint", "-Wwarning"}, pages...)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("mandoc -Tlint: %v\n%s", err, out)
	}
}

// TestCommandPages: docs/commands/ is what the command definitions give
// (make docs rewrites it), one page per verb.
func TestCommandPages(t *testing.T) {
	dir := t.TempDir()
	if err := newApp(commands()...).Run([]string{"nslab", "gendocs", "--markdown", dir}); err != nil {
		t.Fatal(err)
	}
	made, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	kept, _ := filepath.Glob("../../docs/commands/*.md")
	if len(made) != len(kept) {
		t.Errorf("docs/commands has %d pages, the verbs give %d: make docs", len(kept), len(made))
	}
	for _, p := range made {
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join("../../docs/commands", filepath.Base(p)))
		if err != nil || string(got) != string(want) {
			t.Errorf("docs/commands/%s is not what the command's definition gives: make docs", filepath.Base(p))
		}
	}
	index, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := withVerbList(string(index), newApp(commands()...), "commands")
	if err != nil || want != string(index) {
		t.Errorf("docs/commands.md's list of verbs is not the verbs' (%v): make docs", err)
	}
	for _, c := range visible(newApp(commands()...)) {
		if !strings.Contains(string(index), "(commands/"+c.Name+".md)") {
			t.Errorf("docs/commands.md does not list nslab %s", c.Name)
		}
	}
}

// TestEveryVerbHasHelp: every verb's --help has a description and
// examples.
func TestEveryVerbHasHelp(t *testing.T) {
	for _, c := range visible(newApp(commands()...)) {
		if strings.TrimSpace(c.Description) == "" || !strings.Contains(c.Description, "Example") {
			t.Errorf("nslab %s --help has no description or no examples", c.Name)
		}
	}
}
