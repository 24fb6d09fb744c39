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

// TestRunRemovesWhatItWroteInTmp: what a doc's commands write under /tmp
// is gone after them; what was there before they ran is left as it was.
func TestRunRemovesWhatItWroteInTmp(t *testing.T) {
	before, err := os.CreateTemp("/tmp", "nslab-tutorials-before-")
	if err != nil {
		t.Fatal(err)
	}
	before.Close()
	t.Cleanup(func() { os.Remove(before.Name()) })
	made := filepath.Join("/tmp", filepath.Base(t.TempDir())+"-made")
	doc := []string{"```", "$ mkdir -p " + made + "/d && echo x > " + made + "/d/f.yaml", "$ echo y >> " + before.Name() + "; cat " + made + "/d/f.yaml", "```"}
	outs, err := run(doc, []int{1, 2})
	if err != nil || outs[1] != "x\n" {
		t.Fatalf("outputs %v (%v)", outs, err)
	}
	if _, err := os.Lstat(made); err == nil {
		os.RemoveAll(made)
		t.Errorf("%s is left after the commands", made)
	}
	if b, err := os.ReadFile(before.Name()); err != nil || string(b) != "y\n" {
		t.Errorf("%s, there before: %q (%v)", before.Name(), b, err)
	}
}

// TestRunOutputWithoutNewline: a command whose output does not end with
// a newline keeps it, and the next command keeps its own.
func TestRunOutputWithoutNewline(t *testing.T) {
	lines := []string{"```", "$ printf x", "$ echo y", "$ printf 'z\\n\\n'", "```"}
	outs, err := run(lines, []int{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0] != "x" || outs[1] != "y\n" || outs[2] != "z\n\n" {
		t.Errorf("outputs %v", outs)
	}
}
