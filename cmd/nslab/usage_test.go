package main

import (
	"strings"
	"testing"
)

// TestCommandLineErrors: each mistake a newcomer made at the command
// line, typed again: one line on standard error that says what to type
// (the nearest verb, option or traffic run; the unit; the options moved
// before the file, from the user's own words), exit code 2 for a usage
// error, and no help page after it.
func TestCommandLineErrors(t *testing.T) {
	c := newCLI(t)
	file := "../../examples/client-router-server.yaml"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"deplyo", file}, 2, `nslab: no verb "deplyo"; did you mean deploy? (nslab help lists the verbs)`},
		{[]string{"bench", "--durration", "2s", file}, 2, "nslab: bench: no option --durration; did you mean --duration? (nslab help bench)"},
		{[]string{"bench", "--duration", "2", file}, 2, `nslab: bench: --duration "2": a duration with its unit, such as 2s, 500ms or 1m (nslab help bench)`},
		{[]string{"graph", file, "--format", "dot"}, 2, `nslab: unexpected "--format" after the file: put options before it: nslab graph --format dot ` + file},
		{[]string{"deploy", file, "--dry-run"}, 2, `nslab: unexpected "--dry-run" after the file: put options before it: nslab deploy --dry-run ` + file},
		{[]string{"bench", file, "--rate", "10kpps"}, 2, `nslab: unexpected "--rate" after the file: put options before it: nslab bench --rate 10kpps ` + file},
		{[]string{"bench", "--dry-run", "--traffic", "forwrd", file}, 1, `has no traffic run or group "forwrd"; did you mean forward? (its runs: forward, sweep)`},
	} {
		code, out, errOut := c.run(tc.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != tc.code || !strings.Contains(errOut, tc.want) || len(lines) != 1 || out != "" {
			t.Errorf("nslab %s: exit %d, stdout %q, stderr %q; want exit %d and the one line %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.want)
		}
	}
}
