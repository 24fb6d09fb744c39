package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nslab/nslab/internal/fold"
)

// reportVerb finds a command that runs one of nslab's verbs whose
// default form is a report for a person (through ip netns exec, after a
// shell's ; && |, or as bin/nslab; make bench-nat is nslab bench
// itself), and longForm one that asks for
// another form: those are read by programs or wanted whole.
var (
	reportVerb = regexp.MustCompile(`(?:^|[;&|(]\s*|exec \S+ |/)nslab(?: --?[a-z-]+(?:[ =]\S+)?)* (bench|check|path|test|compare|apply|deploy|destroy|start|stop)\b|^make -s bench-nat\b`)
	longForm   = regexp.MustCompile(`--(details|format[ =](json|csv|markdown)|csv|tap|dry-run)\b`)
	// notReport are lines of a report verb's transcript that are not its
	// report: its errors (one line each, naming a file's place or a flag)
	// and a file's place with a finding (validate's form).
	notReport = regexp.MustCompile(`^(nslab: |\S+\.ya?ml:\d+:\d+: )`)
)

// reportLines are the lines over width in a doc's transcripts that a
// report verb printed in its default form.
func reportLines(lines []string, width int) []string {
	var bad []string
	in, report, inError := false, false, false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "```"):
			in, report = !in, false
		case !in:
		case strings.HasPrefix(l, "$ "), strings.HasPrefix(l, "nslab "): // a command, or one a test's log shows (several-hosts.md)
			c := strings.TrimPrefix(l, "$ ")
			report, inError = reportVerb.MatchString(c) && !longForm.MatchString(c), false
		case notReport.MatchString(l):
			inError = true
		case inError && strings.HasPrefix(l, " "): // an error's own lines: the places it lists
		case report && utf8.RuneCountInString(l) > width:
			inError = false
			bad = append(bad, "line "+strconv.Itoa(i+1)+": "+l)
		default:
			inError = false
		}
	}
	return bad
}

// TestReportLinesFit: no line that nslab's bench, check, path, test,
// compare, deploy, apply, destroy, start or stop printed in its default
// form, in any doc's transcript, is wider than 120 characters (the long
// forms are --details and JSON).
func TestReportLinesFit(t *testing.T) {
	for _, path := range docs(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range reportLines(strings.Split(string(data), "\n"), fold.Width) {
			t.Errorf("%s: %s", strings.TrimPrefix(path, "../../"), l)
		}
	}
}

// TestReportLines: the scan finds a long report line, and passes over
// a long error, the long forms, other programs' output and prose.
func TestReportLines(t *testing.T) {
	long := strings.Repeat("x ", 70)
	doc := strings.Join([]string{
		long, // prose
		"```",
		"$ nslab bench examples/a.yaml",
		long,
		"nslab: " + long,
		"  nodes.r1: " + long, // the error's list

		"$ ip netns exec hosta nslab --host a check x.yaml | sed -n 1p",
		long,
		"$ nslab bench --format json x.yaml",
		long,
		"$ tcpdump -n -i eth0",
		long,
		"$ nslab validate /tmp/bad.yaml",
		long,
		"nslab --ssh-config SSHCFG deploy three-hosts.yaml",
		long,
		"```",
	}, "\n")
	got := reportLines(strings.Split(doc, "\n"), 120)
	if len(got) != 3 || !strings.HasPrefix(got[0], "line 4: ") || !strings.HasPrefix(got[1], "line 8: ") || !strings.HasPrefix(got[2], "line 16: ") {
		t.Errorf("found %q, want lines 4, 8 and 16", got)
	}
}
