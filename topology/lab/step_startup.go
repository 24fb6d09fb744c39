package lab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/programs"
	"github.com/nslab/nslab/topology/spec"
)

// Startup scripts (startup:), run as Kathara runs a machine's startup
// file: whole, by bash, in the node's namespaces and view, after its
// exec: lines and before its routing daemons. A line that fails does not
// stop the rest; the deploy goes on and names each, with its line number
// and what it printed (Manager.Strict makes it fail). bash reads the
// script from a pipe (descriptor 3) and, first, a prelude (BASH_ENV, a
// pipe on descriptor 4) that marks, on the script's output:
//   - before each command of the script, its line (a DEBUG trap);
//   - each command that failed, with its line and status (an ERR trap);
//   - each service a service line asks for: systemctl, service and the
//     init scripts the script names are functions there, so that the
//     line asks nslab instead of an init system no node has, and nslab
//     starts the host's program for the service (programs.ServiceOf)
//     after the script, supervised as a run: line is. FRR's and
//     Quagga's start lines are FRR's, which nslab starts after (frr:).
//     Debian's networking (systemctl restart networking, service
//     networking restart, /etc/init.d/networking restart) is ifupdown's
//     ifup -a (after ifdown -a for a restart) run there and then, as the
//     init script runs it: the node's /etc/network/interfaces applied.
// The marks begin with a byte no line prints (RS, 0x1e).

func startupSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for i, s := range n.Startup {
			tag := startupTag(l.Name, n.Name, i)
			steps = append(steps, Step{
				Name: fmt.Sprintf("run in %s, whole, as Kathara runs a startup file: %s", n.Name, s.Name()),
				Shell: func() []string {
					return []string{fmt.Sprintf("%s=%s ip netns exec %s bash <<'NSLAB_STARTUP'  # %s; a failing line does not stop the rest\n%s\nNSLAB_STARTUP", deployed.ServiceEnv, tag, l.Namespace(n.Name), s.Name(), strings.TrimRight(s.Text, "\n"))}
				},
				Do:    func(d *deployer) error { return d.runStartup(n, i, s) },
				Makes: []string{fmt.Sprintf("%s/service-of-startup%d", n.Name, i)}, // the services its lines started ("/service": checked)
				Needs: nodeProcessNeeds(n.Name),
				Undo:  func(d *deployer) error { return d.stopTagged(n.Name, tag, -1) },
			})
		}
	}
	return steps
}

// startupTag marks the processes of node's startup script i and the
// services it started.
func startupTag(lab, node string, i int) string { return fmt.Sprintf("%s/%s/startup%d", lab, node, i) }

// mark is the byte that begins the prelude's marks.
const mark = "\x1e"

// initScriptName is an init script a script names (/etc/init.d/NAME).
var initScriptName = regexp.MustCompile(`/etc/init\.d/([A-Za-z0-9@._-]+)`)

// prelude is the script bash reads first (BASH_ENV): the marks, and the
// service shims. A service line of a service nslab runs (or FRR's, or
// Quagga's) asks nslab; any other runs as written (service X start runs
// the init script where there is one; systemctl has no systemd to ask,
// and fails as it would).
func prelude(text string) string {
	known := append(programs.Names(), "frr", "quagga", "zebra")
	var b strings.Builder
	b.WriteString(`__nslab_mark() { printf '` + mark + `%s\n' "$*" >&2; }
__nslab_known() { case "${1%.service}" in ` + strings.Join(known, "|") + `) return 0 ;; esac; return 1; }
__nslab_networking() {
	mkdir -p /run/network
	case "$1" in
	start) ifup -a ;;
	restart|reload|force-reload) ifdown -a --exclude=lo; ifup -a ;;
	stop) ifdown -a --exclude=lo ;;
	*) command /etc/init.d/networking "$@" ;;
	esac
}
systemctl() {
	local u n=0 all=1
	case "$1" in
	start|restart) n=1 ;;
	enable) [ "$2" = --now ] && n=2 ;;
	esac
	if [ $n -gt 0 ] && [ $# -eq $((n + 1)) ]; then
		case "${@: -1}" in
		networking|networking.service) __nslab_networking "${1/enable/start}"; return ;;
		esac
	fi
	[ $n -gt 0 ] && [ $# -gt $n ] || { command systemctl "$@"; return; }
	for u in "${@:n+1}"; do __nslab_known "$u" || all=0; done
	[ $all = 1 ] || { command systemctl "$@"; return; }
	for u in "${@:n+1}"; do __nslab_mark "S ${u%.service}"; done
}
service() {
	[ "$1" = networking ] && { __nslab_networking "$2"; return; }
	case "$2" in
	start|restart) __nslab_known "$1" && { __nslab_mark "S $1"; return 0; } ;;
	esac
	command service "$@"
}
`)
	b.WriteString(`function /etc/init.d/networking { __nslab_networking "$@"; }
`)
	var names []string
	for _, m := range initScriptName.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) && slices.Contains(known, m[1]) {
			names = append(names, m[1])
		}
	}
	for _, name := range names {
		fmt.Fprintf(&b, `function /etc/init.d/%[1]s {
	case "$1" in
	start|restart) __nslab_mark "S %[1]s" ;;
	*) command /etc/init.d/%[1]s "$@" ;;
	esac
}
`, name)
	}
	b.WriteString(`trap '[ ${#FUNCNAME[@]} -eq 0 ] && __nslab_mark "L $LINENO"' DEBUG
trap '__nslab_rc=$?; [ ${#FUNCNAME[@]} -eq 0 ] && __nslab_mark "F $LINENO $__nslab_rc"' ERR
`)
	return b.String()
}

// scriptLine is what one line of a startup script did.
type scriptLine struct {
	line     int
	failed   bool
	status   int
	output   []string
	services []string
}

// readMarks splits a startup script's output by its marks, in order.
func readMarks(out string) []*scriptLine {
	var lines []*scriptLine
	cur := &scriptLine{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		rest, ok := strings.CutPrefix(text, mark)
		if !ok {
			cur.output = append(cur.output, text)
			continue
		}
		f := strings.Fields(rest)
		switch {
		case len(f) == 2 && f[0] == "L":
			// The traps' own commands mark their line again: one line's
			// commands are one entry.
			n, _ := strconv.Atoi(f[1])
			if n != cur.line || len(lines) == 0 {
				cur = &scriptLine{line: n}
				lines = append(lines, cur)
			}
		case len(f) == 3 && f[0] == "F":
			cur.failed = true
			cur.status, _ = strconv.Atoi(f[2])
		case len(f) == 2 && f[0] == "S":
			cur.services = append(cur.services, f[1])
		}
	}
	return lines
}

// runStartup runs node n's startup script i (see the top of this file),
// then starts the services its lines asked for.
//
// Equivalent to: ip netns exec NS bash SCRIPT (its service lines run as
// nslab runs them)
func (d *deployer) runStartup(n *spec.Node, i int, s *spec.Script) error {
	out, waitErr, log, err := d.bashInNode(n, startupTag(d.lab.Name, n.Name, i), i, s)
	if err != nil {
		return err
	}
	failed, asked := scriptReport(s, out)
	if waitErr != nil && len(failed) == 0 {
		// bash itself failed (a syntax error ends a script): that is the
		// script's failure, whatever was marked.
		failed = append(failed, fmt.Sprintf("%s: bash: %v%s", s.Name(), waitErr, lastLines(log)))
	}
	if len(failed) > 0 {
		if d.m.Strict {
			return fmt.Errorf("in %s, %d line(s) of the startup script failed (a strict deploy stops here): %s", n.Name, len(failed), strings.Join(failed, "; "))
		}
		for _, f := range failed {
			d.warn("in %s, %s; the rest of the script ran, as in Kathara", n.Name, f)
		}
	}
	for k, a := range asked {
		if err := d.startScriptService(n, i, k, a); err != nil {
			return err
		}
	}
	return nil
}

// bashInNode runs script s (node n's i-th) with its prelude in bash in
// the node, marked with tag, to its end, and returns what it printed,
// how bash ended, and its log's path.
func (d *deployer) bashInNode(n *spec.Node, tag string, i int, s *spec.Script) (out string, waitErr error, logPath string, err error) {
	log, err := d.openLog(n.Name, "startup", i)
	if err != nil {
		return "", nil, "", err
	}
	defer log.Close()
	scriptR, scriptW, err := os.Pipe()
	if err != nil {
		return "", nil, "", err
	}
	preludeR, preludeW, err := os.Pipe()
	if err != nil {
		scriptR.Close()
		scriptW.Close()
		return "", nil, "", err
	}
	cmd := command("", log, tag)
	cmd.Path, cmd.Args = "/bin/bash", []string{"bash", "/dev/fd/3"}
	cmd.Env = append(cmd.Env, "BASH_ENV=/dev/fd/4")
	cmd.ExtraFiles = []*os.File{scriptR, preludeR}
	err = d.startIn(n, cmd)
	scriptR.Close()
	preludeR.Close()
	if err != nil {
		scriptW.Close()
		preludeW.Close()
		return "", nil, "", fmt.Errorf("run %s in %s: %w", s.Name(), n.Name, err)
	}
	go func() { _, _ = preludeW.WriteString(prelude(s.Text)); preludeW.Close() }()
	go func() { _, _ = scriptW.WriteString(s.Text); scriptW.Close() }()
	stop := context.AfterFunc(d.ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	waitErr = cmd.Wait()
	if d.ctx.Err() != nil {
		return "", nil, "", d.ctx.Err()
	}
	b, err := os.ReadFile(log.Name())
	return string(b), waitErr, log.Name(), err
}

// askedService is a service a startup script's line asked for: its name,
// and the line ("r1.startup line 3, \"systemctl start bind9\"").
type askedService struct {
	name, where string
}

// scriptReport reads a startup script's marked output: each line that
// failed (its number, text, status and last output lines), and the
// services its lines asked for, in order.
func scriptReport(s *spec.Script, out string) (failed []string, asked []askedService) {
	text := strings.Split(s.Text, "\n")
	for _, l := range readMarks(out) {
		src := ""
		if l.line >= 1 && l.line <= len(text) {
			src = strings.TrimSpace(text[l.line-1])
		}
		where := fmt.Sprintf("%s line %d, %q", s.Name(), l.line, src)
		for _, name := range l.services {
			asked = append(asked, askedService{name: name, where: where})
		}
		if !l.failed {
			continue
		}
		what := fmt.Sprintf("%s, exited %d", where, l.status)
		if len(l.output) > 0 {
			what += ": " + strings.Join(lastOf(l.output, 3), " / ")
		}
		failed = append(failed, what)
	}
	return failed, asked
}

// lastOf is the last n of lines.
func lastOf(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// startScriptService starts service a, which node n's startup script i
// asked for (the k-th it asked for), as nslab runs it; FRR's and
// Quagga's are the node's frr: (started after); one nslab does not run
// is a warning (a strict deploy's error). A service that exits at once
// is, like a line that fails, a warning naming the line (see
// checkServices).
func (d *deployer) startScriptService(n *spec.Node, i, k int, a askedService) error {
	name := a.name
	switch name {
	case "frr", "quagga", "zebra":
		if n.FRR == nil {
			d.warn("in %s, the startup script starts %s, but the node runs no FRR (it has no frr: and no FRR or Quagga configuration)", n.Name, name)
		}
		return nil
	}
	_, svc, known := programs.ServiceOf("service " + name + " start")
	if !known {
		msg := fmt.Sprintf("in %s, the startup script starts service %s, which nslab does not run (it runs %s; start the program in a run: line)", n.Name, name, strings.Join(programs.KnownServices(), ", "))
		if d.m.Strict {
			return fmt.Errorf("%s", msg)
		}
		d.warn("%s", msg)
		return nil
	}
	// Recorded as "startupI: RUN", stopped with the script's processes
	// (one tag: see stopTagged).
	if err := d.startTaggedService(n, startupTag(d.lab.Name, n.Name, i), fmt.Sprintf("startup%d", i), "startup-service", 100*i+k, svc); err != nil {
		return err
	}
	d.services[len(d.services)-1].asked = a.where
	rec := &d.st.Services[len(d.st.Services)-1] // for node start to start it again
	rec.Service, rec.Script, rec.Asked = name, i, k
	return d.m.saveState(d.st)
}
