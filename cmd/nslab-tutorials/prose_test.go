package main

import (
	"os"

	"github.com/nslab/nslab/internal/fold"
	"path/filepath"
	"strings"
	"testing"
)

// docs are every markdown file of the repository that has transcripts.
func docs(t *testing.T) []string {
	t.Helper()
	all := []string{"../../README.md"}
	for _, g := range []string{"../../docs/*.md", "../../docs/tutorials/*.md"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m...)
	}
	return all
}

// TestProseQuotesItsBlocks: no doc's prose quotes a figure that the
// transcript above it does not show (make tutorials changes the block's
// figures and not the prose: a figure copied into prose drifts).
func TestProseQuotesItsBlocks(t *testing.T) {
	for _, path := range docs(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range proseFigures(strings.Split(string(data), "\n")) {
			t.Errorf("%s: %s", strings.TrimPrefix(path, "../../"), f)
		}
	}
}

// TestProseFigures: a measured figure in the prose after a transcript is
// found unless its block or the next one shows it; a round setting (20
// ms, 1000 packets) is not a measured figure.
func TestProseFigures(t *testing.T) {
	doc := strings.Split("```\n$ ping x\ntime=42.616 ms\n```\n\nround trips of 42.616 ms through 20 ms, queues of 1000 packets,\nthen 43.1 ms; a run of 50 kpps:\n\n```\n$ bench --rate 50kpps\n12,345 pps\n```\nit sent 12,345 pps and 99.1 ms\n# next\n7.5 ms", "\n")
	got := proseFigures(doc)
	want := []string{
		`line 7 quotes "43.1 ms", which the block above it (lines 1-4) does not show`,
		`line 13 quotes "99.1 ms", which the block above it (lines 9-12) does not show`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompareMasksFigures: outputs that differ in figures, in the widths
// of columns and in blank lines agree, and so does a line today prints
// more (a table of losses the doc's run did not have); a changed word, or
// a doc line today's output lacks, is a drift at the doc's line.
func TestCompareMasksFigures(t *testing.T) {
	doc := strings.Split("```\n$ nslab bench x\nlab bc33720: sent   20000 in 2.01s\n\nloss 0 (0.00%)\nnslab 7092f33-dirty\n$ nslab path x\nhop 1 r1\nhop 2 r2\n```", "\n")
	cmds := []int{1, 6}
	same := map[int]string{0: "lab 9f1e2d0: sent 1234567 in 13.4s\nwhere the 17 lost packets went:\nloss 17 (0.12%)\nnslab 21b384e\n", 1: "hop 2 r1\nhop 3 r2\n"}
	if d := compare(doc, cmds, same); len(d) != 0 {
		t.Errorf("figures and an added line alone differ, found %v", d)
	}
	changed := map[int]string{0: "lab 9f1e2d0: received 1234567 in 13.4s\nloss 17 (0.12%)\n", 1: "hop 2 r1\n"}
	d := compare(doc, cmds, changed)
	if len(d) != 2 || d[0].Line != 2 || d[0].DocLine != "lab bc33720: sent   20000 in 2.01s" || d[0].TodayLine != "lab 9f1e2d0: received 1234567 in 13.4s" ||
		d[1].DocLine != "hop 2 r2" || d[1].TodayLine != "" {
		t.Errorf("drifts %+v", d)
	}
}

// TestCompareVaries: a duration in another unit is the same figure, a
// path into the repository from another clone the same path; a line
// whose start a varies mark names is left out on both sides (it may come
// and go), in its own block only.
func TestCompareVaries(t *testing.T) {
	doc := strings.Split("<!-- nslab-tutorials: vm -->\n<!-- nslab-tutorials: varies: outage: | steady window -->\n```\n$ nslab bench x\ndeployed in 523.31ms from /work/main/examples/a.yaml\noutage: 211 packets lost (210 inside router r1, 1 link r1:eth1 -> r2:eth1)\nsent 5\n```\n```\n$ nslab bench y\noutage: 3 packets lost (3 inside router r1)\n```", "\n")
	cmds := []int{3, 9}
	if !vmMarked(doc, 2) || vmMarked(doc, 8) {
		t.Errorf("the vm mark above the varies mark is not seen, or seen on the next block")
	}
	outs := map[int]string{0: "deployed in 1.07574s from /tmp/nslab-docs-check-1/examples/a.yaml\noutage: 235 packets lost (235 inside router r1)\nsteady window 402358\nsent 7\n", 1: "outage: 3 packets lost (2 inside router r1, 1 link a -> b)\n"}
	d := compare(doc, cmds, outs)
	if len(d) != 1 || d[0].Line != 10 {
		t.Errorf("drifts %+v, want the second block's outage line alone", d)
	}
}

// TestMaskCPUModel: the report's machine line names the CPU model, which
// differs between machines of one kind; a line that only looks like it
// (no "kernel" first, or no model after "; ") keeps its words.
func TestMaskCPUModel(t *testing.T) {
	amd, intel := mask("kernel 6.18.44-fc-v1252 #1 SMP PREEMPT_DYNAMIC @0; AMD EPYC"), mask("kernel 6.18.44-fc-v1294 #1 SMP PREEMPT_DYNAMIC @0; Intel(R) Xeon(R) Processor")
	if amd != intel {
		t.Errorf("%q and %q differ", amd, intel)
	}
	if mask("the kernel drops it; AMD EPYC") == mask("the kernel drops it; Intel Xeon") {
		t.Error("a prose-like line lost its words")
	}
}

// TestUnfold: lines fold made of one are joined whatever their breaks
// (a doc's and today's run break one line at different words), and a
// sub-line under a short line is not.
func TestUnfold(t *testing.T) {
	long := strings.Repeat("word ", 22) + "x" // 111 characters
	a := fold.Line(long+" 12 and the rest of it", 120)
	b := fold.Line(long+" 123456789012 and the rest of it", 120)
	if len(a) != 2 || len(b) != 2 || a[1] == b[1] {
		t.Fatalf("premise: the two lines fold at different words: %q %q", a, b)
	}
	if ua, ub := unfold(a, 120), unfold(b, 120); len(ua) != 1 || len(ub) != 1 || mask(ua[0]) != mask(ub[0]) {
		t.Errorf("not joined alike: %q %q", ua, ub)
	}
	sub := []string{"decision on pps: B is faster", "  (pps +3%, interval +1% .. +5%)", "  10 pairs"}
	if got := unfold(sub, 120); len(got) != 3 {
		t.Errorf("sub-lines under a short line joined: %q", got)
	}
}
