package lab

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/programs"
	"github.com/nslab/nslab/topology/spec"
)

// ProgramsError is a lab that needs what this machine lacks: programs its
// nodes' command lines, services and routing daemons run, and service
// lines nslab does not know how to run.
type ProgramsError struct {
	Missing []programs.Missing
	Unknown []string // service lines of services nslab does not run (the first two)
	more    int      // and how many more
}

func (e *ProgramsError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		var each []string
		for _, m := range e.Missing {
			each = append(each, m.String())
		}
		s := "this machine lacks " + strings.Join(each, "; ")
		if cmd := programs.InstallCommand(e.Missing); cmd != "" {
			s += ": " + cmd
		}
		parts = append(parts, s)
	}
	if len(e.Unknown) > 0 {
		unknown := e.Unknown
		if e.more > 0 {
			unknown = append(unknown[:len(unknown):len(unknown)], fmt.Sprintf("%d more", e.more))
		}
		parts = append(parts, fmt.Sprintf("%s: no systemd runs in a node, and nslab runs the programs of services %s for such lines; start the program in a run: line instead",
			strings.Join(unknown, "; "), strings.Join(programs.KnownServices(), ", ")))
	}
	return strings.Join(parts, "; and ")
}

// CheckPrograms looks up, on this machine (in the calling process's
// mount namespace), every program lab l's nodes run: the commands of
// their exec: and run: lines (as a shell parses them), the programs of
// the services their service lines start, and their routing daemons. A
// service line of a service nslab does not run is refused, but where an
// init script of that name is there to run (`service X start` runs it
// without systemd). A
// program a line reaches by a path in a node's own directories (/etc,
// /run, /tmp, /var/log) or gives in the node's files: is the node's, not
// looked up. Nil when nothing is missing.
func CheckPrograms(l *spec.Lab) error {
	c := &programCheck{lab: l, err: &ProgramsError{}, missing: map[string]*programs.Missing{}, found: map[string]bool{}}
	for _, n := range l.Nodes {
		c.lines(n, "exec", n.Exec, n.ServiceLines)
		c.lines(n, "run", n.Run, nil)
		for _, sc := range n.Startup {
			c.script(n, sc)
		}
		if n.FRR != nil {
			for _, p := range []string{frrBin + "/zebra", "vtysh"} {
				c.need(p, fmt.Sprintf("node %s's FRR", n.Name))
			}
		}
		if n.BIRD != nil {
			c.need("bird", fmt.Sprintf("node %s's BIRD", n.Name))
		}
	}
	e := c.err
	for i := range e.Missing {
		e.Missing[i] = *c.missing[e.Missing[i].Program]
	}
	if len(e.Missing) == 0 && len(e.Unknown) == 0 {
		return nil
	}
	return e
}

// programCheck is CheckPrograms under way: what is missing so far, and
// what was looked up.
type programCheck struct {
	lab     *spec.Lab
	err     *ProgramsError
	missing map[string]*programs.Missing
	found   map[string]bool
}

// need looks program up (once) and records where it is needed when the
// machine lacks it.
func (c *programCheck) need(program, where string) {
	ok, seen := c.found[program]
	if !seen {
		ok = programs.Found(program)
		c.found[program] = ok
	}
	if ok {
		return
	}
	m := c.missing[program]
	if m == nil {
		m = &programs.Missing{Program: program, Package: programs.Package(program)}
		c.missing[program] = m
		c.err.Missing = append(c.err.Missing, *m)
	}
	if !slices.Contains(m.Where, where) {
		m.Where = append(m.Where, where)
	}
}

// unknown records a service line of a service nslab does not run.
func (c *programCheck) unknown(what string) {
	if len(c.err.Unknown) < 2 {
		c.err.Unknown = append(c.err.Unknown, what)
		return
	}
	c.err.more++
}

// ownProgram reports whether program is node n's own: a path its files
// give, or in one of its own directories (but the init scripts, which
// the host's /etc holds).
func ownProgram(n *spec.Node, program string) bool {
	if !strings.HasPrefix(program, "/") {
		return false
	}
	if n.FileAt(program) != nil {
		return true
	}
	for _, d := range []string{"/etc/", "/run/", "/var/run/", "/tmp/", "/var/log/"} {
		if strings.HasPrefix(path.Clean(program), d) && !strings.HasPrefix(program, "/etc/init.d/") {
			return true
		}
	}
	return false
}

// unrunnable reports whether a service line of service name, which nslab
// does not run, cannot run as written: systemctl has no systemd to ask,
// and service X start or the init script need an init script, the
// node's or the host's (service runs it without systemd).
func unrunnable(n *spec.Node, line, name string) bool {
	if strings.HasPrefix(strings.TrimSpace(line), "systemctl") {
		return true
	}
	script := "/etc/init.d/" + name
	return n.FileAt(script) == nil && !programs.Found(script)
}

// lines checks node n's command lines of kind (exec, run), each run by
// a shell; services are its service lines.
func (c *programCheck) lines(n *spec.Node, kind string, list []string, services map[int]programs.Service) {
	for i, line := range list {
		at := position(c.lab, fmt.Sprintf("nodes.%s.%s[%d]", n.Name, kind, i))
		where := fmt.Sprintf("node %s's %s line %d (%s)", n.Name, kind, i+1, at)
		if svc, ok := services[i]; ok {
			c.need(svc.Program, fmt.Sprintf("node %s's service %s (%s line %d, %s)", n.Name, svc.Name, kind, i+1, at))
			continue
		}
		if name, _, known := programs.ServiceOf(line); name != "" && !known {
			if unrunnable(n, line, name) {
				c.unknown(fmt.Sprintf("%s, %q, starts service %s", where, line, name))
			}
			continue
		}
		cmds, err := programs.Commands(line)
		if err != nil {
			continue // the shell says so when it runs the line
		}
		for _, p := range cmds {
			if !ownProgram(n, p) {
				c.need(p, where)
			}
		}
	}
}

// script checks node n's startup script sc: its service lines, and the
// programs the rest runs (its service lines are nslab's: see
// step_startup.go).
func (c *programCheck) script(n *spec.Node, sc *spec.Script) {
	where := func(line int) string { return scriptPlace(n, sc, line) }
	for k, line := range strings.Split(sc.Text, "\n") {
		name, svc, known := programs.ServiceOf(line)
		switch {
		case name == "" || name == "frr" || name == "quagga" || name == "zebra":
		case name == "networking":
			c.need("ifup", fmt.Sprintf("node %s's networking (%s)", n.Name, where(k+1)))
		case known:
			c.need(svc.Program, fmt.Sprintf("node %s's service %s (%s)", n.Name, svc.Name, where(k+1)))
		case unrunnable(n, line, name):
			c.unknown(fmt.Sprintf("%s, %q, starts service %s", where(k+1), strings.TrimSpace(line), name))
		}
	}
	cmds, err := programs.CommandsAt(sc.Text)
	if err != nil {
		return // bash says so when it runs the script
	}
	for _, p := range cmds {
		if p.Name == "systemctl" || p.Name == "service" || strings.HasPrefix(p.Name, "/etc/init.d/") || ownProgram(n, p.Name) {
			continue
		}
		c.need(p.Name, where(p.Line))
	}
}

// scriptPlace names line of node n's startup script sc: "node r1's
// startup script r1.startup line 3", or, for a script written in the lab
// file, "line 3 of node r1's startup script (at line 9 of the lab file)".
func scriptPlace(n *spec.Node, sc *spec.Script, line int) string {
	if sc.From != "" {
		return fmt.Sprintf("node %s's startup script %s line %d", n.Name, sc.From, line)
	}
	return fmt.Sprintf("line %d of node %s's startup script (at line %d of the lab file)", line, n.Name, sc.Line)
}

// position is where path is in l's file ("lab.yaml:12"), or the file.
func position(l *spec.Lab, path string) string {
	p := l.At(path, "")
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return p.File
}
