package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranscriptFiles: a transcript's file (a plot the VM drew) ends the
// output of the command before it and is written beside the tutorial;
// a name with a directory in it is refused.
func TestTranscriptFiles(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.txt")
	doc := []string{"```", "$ nslab bench x", "old", "```"}
	if err := os.WriteFile(tr, []byte("vmtest: boot\n$ nslab bench x\nnew line\n@@file p.png\naGVsbG8=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outs, err := fromTranscript(tr, doc, []int{1})
	if err != nil || outs[0] != "new line\n" {
		t.Fatalf("output %q (%v)", outs[0], err)
	}
	if err := attachments(tr, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "p.png")); err != nil || string(b) != "hello" {
		t.Errorf("p.png: %q (%v)", b, err)
	}
	if err := os.WriteFile(tr, []byte("@@file ../p.png\naGVsbG8=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := attachments(tr, dir); err == nil || !strings.Contains(err.Error(), "not a file name") {
		t.Errorf("a name outside the directory: %v", err)
	}
}
