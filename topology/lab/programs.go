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
	e := &ProgramsError{}
	missing := map[string]*programs.Missing{}
	found := map[string]bool{}
	need := func(program, where string) {
		ok, seen := found[program]
		if !seen {
			ok = programs.Found(program)
			found[program] = ok
		}
		if ok {
			return
		}
		m := missing[program]
		if m == nil {
			m = &programs.Missing{Program: program, Package: programs.Package(program)}
			missing[program] = m
			e.Missing = append(e.Missing, *m)
		}
		if !slices.Contains(m.Where, where) {
			m.Where = append(m.Where, where)
		}
	}
	for _, n := range l.Nodes {
		own := func(program string) bool {
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
		lines := func(kind string, list []string, services map[int]programs.Service) {
			for i, line := range list {
				at := position(l, fmt.Sprintf("nodes.%s.%s[%d]", n.Name, kind, i))
				where := fmt.Sprintf("node %s's %s line %d (%s)", n.Name, kind, i+1, at)
				if svc, ok := services[i]; ok {
					need(svc.Program, fmt.Sprintf("node %s's service %s (%s line %d, %s)", n.Name, svc.Name, kind, i+1, at))
					continue
				}
				if name, _, known := programs.ServiceOf(line); name != "" && !known {
					// service X and the init script run the script where
					// there is one (the node's or the host's), as they do
					// without systemd; systemctl has nothing to ask.
					script := "/etc/init.d/" + name
					if !strings.HasPrefix(strings.TrimSpace(line), "systemctl") && (n.FileAt(script) != nil || programs.Found(script)) {
						continue
					}
					if len(e.Unknown) < 2 {
						e.Unknown = append(e.Unknown, fmt.Sprintf("%s, %q, starts service %s", where, line, name))
					} else {
						e.more++
					}
					continue
				}
				cmds, err := programs.Commands(line)
				if err != nil {
					continue // the shell says so when it runs the line
				}
				for _, c := range cmds {
					if !own(c) {
						need(c, where)
					}
				}
			}
		}
		lines("exec", n.Exec, n.ServiceLines)
		lines("run", n.Run, nil)
		for _, sc := range n.Startup {
			where := func(line int) string {
				return fmt.Sprintf("node %s's startup script %s line %d", n.Name, sc.Name(), line)
			}
			for k, line := range strings.Split(sc.Text, "\n") {
				name, svc, known := programs.ServiceOf(line)
				switch {
				case name == "" || name == "frr" || name == "quagga" || name == "zebra":
				case known:
					need(svc.Program, fmt.Sprintf("node %s's service %s (%s)", n.Name, svc.Name, where(k+1)))
				case strings.HasPrefix(strings.TrimSpace(line), "systemctl") || !(n.FileAt("/etc/init.d/"+name) != nil || programs.Found("/etc/init.d/"+name)):
					if len(e.Unknown) < 2 {
						e.Unknown = append(e.Unknown, fmt.Sprintf("%s, %q, starts service %s", where(k+1), strings.TrimSpace(line), name))
					} else {
						e.more++
					}
				}
			}
			cmds, err := programs.CommandsAt(sc.Text)
			if err != nil {
				continue // bash says so when it runs the script
			}
			for _, c := range cmds {
				// The script's service lines are nslab's (see step_startup.go).
				if c.Name == "systemctl" || c.Name == "service" || strings.HasPrefix(c.Name, "/etc/init.d/") || own(c.Name) {
					continue
				}
				need(c.Name, where(c.Line))
			}
		}
		if n.FRR != nil {
			for _, p := range []string{frrBin + "/zebra", "vtysh"} {
				need(p, fmt.Sprintf("node %s's FRR", n.Name))
			}
		}
		if n.BIRD != nil {
			need("bird", fmt.Sprintf("node %s's BIRD", n.Name))
		}
	}
	for i := range e.Missing {
		e.Missing[i] = *missing[e.Missing[i].Program]
	}
	if len(e.Missing) == 0 && len(e.Unknown) == 0 {
		return nil
	}
	return e
}

// position is where path is in l's file ("lab.yaml:12"), or the file.
func position(l *spec.Lab, path string) string {
	p := l.At(path, "")
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return p.File
}
