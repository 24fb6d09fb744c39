package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// firstScreen returns the command lines of README's "Start here" section
// (its sh blocks, comments cut), in order.
func firstScreen(readme string) []string {
	start := strings.Index(readme, "\n## Start here\n")
	if start < 0 {
		return nil
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var lines []string
	in := false
	for _, l := range strings.Split(section, "\n") {
		switch {
		case l == "```sh":
			in = true
		case l == "```":
			in = false
		case in:
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// TestPrivilegedFirstScreen: a newcomer who types README's first screen,
// line by line as written, in the repository's directory, with nothing
// but the usual PATH, gets make run's report, a deployed lab, a ping
// answered across it, a bench report whose packets all add up, and the
// lab removed. make test is the line left out: it is this suite.
func TestPrivilegedFirstScreen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, as README's first screen says")
	}
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := firstScreen(string(data))
	var script []string
	for _, l := range lines {
		if l != "make test" {
			script = append(script, l)
		}
	}
	if len(script) < 5 || script[0] != "make run" {
		t.Fatalf("README's first screen has no make run and lab to follow: %q", lines)
	}
	t.Cleanup(func() { _ = exec.Command("../../bin/nslab", "destroy", "--name", "crs").Run() })
	cmd := exec.Command("bash", "-e", "-x", "-c", strings.Join(script, "\n"))
	cmd.Dir = "../.."
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + goDir(t), "HOME=" + os.Getenv("HOME")}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("README's first screen failed: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.Bytes()
	// make run's report (on standard output; its live lines and the
	// shell's trace are on standard error) reads at a glance.
	text := stdout.String()
	if i, j := strings.Index(text, "lab fwd, traffic"), strings.Index(text, "nslab is "); i >= 0 && j > i {
		report := strings.Split(strings.TrimRight(text[i:j], "\n"), "\n")
		if len(report) >= 40 {
			t.Errorf("make run's report is %d lines, want under 40", len(report))
		}
		for _, l := range report {
			if len(l) > 120 {
				t.Errorf("make run's report has a line of %d characters: %s", len(l), l)
			}
		}
	} else {
		t.Errorf("no report of make run's found:\n%s", text)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^bottleneck: `),                                                   // make run's report
		regexp.MustCompile(`nslab is /\S+/bin/nslab;`),                                            // and where nslab is
		regexp.MustCompile(`(?m)^deployed lab crs: 3 nodes`),                                      // deploy
		regexp.MustCompile(`3 packets transmitted, 3 received`),                                   // ping
		regexp.MustCompile(`(?m)^sent (\d+) = received \d+ \+ named drops \d+ \+ unaccounted 0$`), // bench, once for make run's and once for the lab's
		regexp.MustCompile(`(?m)^destroyed lab crs: 3 namespaces removed`),
	} {
		if !want.Match(out) {
			t.Errorf("README's first screen printed no %s:\n%s", want, out)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^sent \d+ = received`).FindAll(out, -1)); n != 2 {
		t.Errorf("%d bench reports, want make run's and the lab's", n)
	}
}

// goDir is the directory of the go command the test runs with, for
// make run (a newcomer has Go on the PATH).
func goDir(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on the PATH")
	}
	return p[:strings.LastIndex(p, "/")]
}
