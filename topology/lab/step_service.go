package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/programs"
	"github.com/nslab/nslab/topology/spec"
)

// Programs in nodes: a node's exec: command lines run once at deploy (each
// must exit 0), then its run: programs (services) start and keep running
// until the lab is destroyed. Both enter the node as nslab exec does, run
// through /bin/sh -c, and write their output to a log per node and program
// in the lab's directory under the state directory. Each service runs in a
// session of its own (its process group is what destroy stops) and carries
// NSLAB_SERVICE=LAB/NODE/N in its environment, so a destroy finds it even
// when the deploy that started it was killed before it could record its
// pid.

// serviceGrace is how long a service must keep running after its start for
// the deploy to count it as started: a program that exits at once (a typo,
// a port in use) fails the deploy.
const serviceGrace = 300 * time.Millisecond

func execSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for i, c := range n.Exec {
			if svc, ok := n.ServiceLines[i]; ok {
				steps = append(steps, execServiceStep(l, n, i, c, svc))
				continue
			}
			steps = append(steps, Step{
				Name: fmt.Sprintf("run in %s: %s", n.Name, c),
				Shell: func() []string {
					return []string{fmt.Sprintf("ip netns exec %s sh -c %s", l.Namespace(n.Name), ShellQuote(c))}
				},
				Do:    func(d *deployer) error { return d.execOnce(n, i, c) },
				Needs: nodeProcessNeeds(n.Name), // a one-shot: taken back by rebuilding the node
			})
		}
	}
	return steps
}

// execServiceStep starts, in place of node n's exec line i (a service
// line, see spec.Node.ServiceLines), the host's program for the service,
// supervised as a run: line is and stopped with the lab.
func execServiceStep(l *spec.Lab, n *spec.Node, i int, line string, svc programs.Service) Step {
	tag := execServiceTag(l.Name, n.Name, i)
	return Step{
		Name: fmt.Sprintf("start service %s in %s (for its exec line %q): %s", svc.Name, n.Name, line, svc.Run),
		Shell: func() []string {
			log := logPath(DefaultStateDir, l.Name, n.Name, "svc", i)
			return []string{fmt.Sprintf("mkdir -p %s && %s=%s ip netns exec %s setsid sh -c %s </dev/null >%s 2>&1 &  # %s", filepath.Dir(log), deployed.ServiceEnv, tag, l.Namespace(n.Name), ShellQuote(svc.Run), log, line)}
		},
		Do:    func(d *deployer) error { return d.startExecService(n, i, svc) },
		Makes: []string{fmt.Sprintf("%s/service-of-exec%d", n.Name, i)}, // "/service": the check of services follows it
		Needs: nodeProcessNeeds(n.Name),
		Undo:  func(d *deployer) error { return d.stopTagged(n.Name, tag, -1) },
	}
}

// execServiceTag marks the program of node's exec line i, a service.
func execServiceTag(lab, node string, i int) string { return fmt.Sprintf("%s/%s/svc%d", lab, node, i) }

// startExecService starts the program of service svc for node n's exec
// line i in the node.
func (d *deployer) startExecService(n *spec.Node, i int, svc programs.Service) error {
	return d.startTaggedService(n, execServiceTag(d.lab.Name, n.Name, i), fmt.Sprintf("svc%d", i), "svc", i, svc)
}

// startTaggedService starts the program of service svc in node n, marked
// with tag, and records it (index -1, as routing daemons are, its command
// "KEY: RUN"), its output in the log of logKind and logIndex.
//
// Equivalent to: ip netns exec NS setsid sh -c 'RUN' </dev/null >LOG 2>&1 &
func (d *deployer) startTaggedService(n *spec.Node, tag, key, logKind string, logIndex int, svc programs.Service) error {
	log, err := d.openLog(n.Name, logKind, logIndex)
	if err != nil {
		return err
	}
	defer log.Close() // the program has its own descriptor
	d.st.Services = append(d.st.Services, state.ServiceRecord{Node: n.Name, Index: -1, Command: fmt.Sprintf("%s: %s", key, svc.Run), Log: log.Name()})
	rec := &d.st.Services[len(d.st.Services)-1]
	if err := d.m.saveState(d.st); err != nil { // ahead: a killed deploy's destroy knows to look
		return err
	}
	cmd := command(svc.Run, log, tag)
	if err := d.startIn(n, cmd); err != nil {
		return fmt.Errorf("start service %s (%q) in %s: %w", svc.Name, svc.Run, n.Name, err)
	}
	rec.PID = cmd.Process.Pid
	rec.Start, _ = deployed.ProcessStart(rec.PID)
	w := &waited{rec: *rec}
	w.mu.Lock()
	go func() { w.err = cmd.Wait(); w.mu.Unlock() }() // reaps it; checkServices looks
	d.services = append(d.services, w)
	return d.m.saveState(d.st)
}

func serviceSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for i, c := range n.Run {
			steps = append(steps, Step{
				Name: fmt.Sprintf("start service in %s: %s", n.Name, c),
				Shell: func() []string {
					log := logPath(DefaultStateDir, l.Name, n.Name, "run", i)
					return []string{fmt.Sprintf("mkdir -p %s && ip netns exec %s setsid sh -c %s </dev/null >%s 2>&1 &", filepath.Dir(log), l.Namespace(n.Name), ShellQuote(c), log)}
				},
				Do:    func(d *deployer) error { return d.startService(n, i, c) },
				Makes: []string{fmt.Sprintf("%s/service%d", n.Name, i)},
				Needs: nodeProcessNeeds(n.Name),
				Undo:  func(d *deployer) error { return d.stopTagged(n.Name, fmt.Sprintf("%s/%s/%d", l.Name, n.Name, i), i) },
			})
		}
	}
	if len(steps) > 0 || slices.ContainsFunc(l.Nodes, func(n *spec.Node) bool { return len(n.ServiceLines) > 0 || len(n.Startup) > 0 }) {
		steps = append(steps, Step{
			Name: fmt.Sprintf("check that the services keep running (%v)", serviceGrace),
			Shell: func() []string {
				return []string{fmt.Sprintf("sleep %.1f  # then check that each service still runs", serviceGrace.Seconds())}
			},
			Do:      func(d *deployer) error { return d.checkServices() },
			Key:     checkServicesKey,
			Follows: "/service",
			NoUndo:  true,
		})
	}
	return steps
}

// logPath is where a node's program writes its output: the lab's
// directory in the state directory, one file per program.
func logPath(stateDir, labName, node, kind string, i int) string {
	return filepath.Join(stateDir, labName, fmt.Sprintf("%s.%s%d.log", node, kind, i))
}

// command is the process of one program line, entering nothing yet: its
// output goes to log, its environment marks it with tag.
func command(line string, log *os.File, tag string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), deployed.ServiceEnv+"="+tag)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// openLog creates the log file of a program, and the lab's directory.
func (d *deployer) openLog(node, kind string, i int) (*os.File, error) {
	p := logPath(d.m.stateDir(), d.lab.Name, node, kind, i)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return f, nil
}

// execOnce runs exec line i of node n to its end, in the node.
//
// Equivalent to: ip netns exec NS sh -c 'LINE'
func (d *deployer) execOnce(n *spec.Node, i int, line string) error {
	return d.commandOnce(n, "exec", i, line)
}

// commandOnce runs line, the kind's i-th command of node n (exec, or a
// variant's before or after), in the node to its end, its output in its
// own log.
func (d *deployer) commandOnce(n *spec.Node, kind string, i int, line string) error {
	log, err := d.openLog(n.Name, kind, i)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := command(line, log, fmt.Sprintf("%s/%s/%s%d", d.lab.Name, n.Name, kind, i))
	if err := d.startIn(n, cmd); err != nil {
		return fmt.Errorf("run %q in %s: %w", line, n.Name, err)
	}
	stop := context.AfterFunc(d.ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%q in %s failed (%v)%s", line, n.Name, err, lastLines(log.Name()))
	}
	return nil
}

// startService starts run line i of node n in the node and records it.
//
// Equivalent to: ip netns exec NS setsid sh -c 'LINE' </dev/null >LOG 2>&1 &
func (d *deployer) startService(n *spec.Node, i int, line string) error {
	log, err := d.openLog(n.Name, "run", i)
	if err != nil {
		return err
	}
	defer log.Close() // the program has its own descriptor
	d.st.Services = append(d.st.Services, state.ServiceRecord{Node: n.Name, Index: i, Command: line, Log: log.Name()})
	rec := &d.st.Services[len(d.st.Services)-1]
	if err := d.m.saveState(d.st); err != nil { // ahead: a killed deploy's destroy knows to look
		return err
	}
	cmd := command(line, log, fmt.Sprintf("%s/%s/%d", d.lab.Name, n.Name, i))
	if err := d.startIn(n, cmd); err != nil {
		return fmt.Errorf("start %q in %s: %w", line, n.Name, err)
	}
	rec.PID = cmd.Process.Pid
	rec.Start, _ = deployed.ProcessStart(rec.PID)
	w := &waited{rec: *rec}
	w.mu.Lock()
	go func() { w.err = cmd.Wait(); w.mu.Unlock() }() // reaps it; checkServices looks
	d.services = append(d.services, w)
	return d.m.saveState(d.st)
}

// waited is a service this deploy started; its mutex is held until the
// program exits.
type waited struct {
	rec state.ServiceRecord
	mu  sync.Mutex
	err error
	// asked is the startup script's line that asked for the service
	// ("r1.startup line 3, \"systemctl start bind9\""), or "" for a
	// run: or exec: line's.
	asked string
}

// exited reports whether the program has exited, and how.
func (w *waited) exited() (bool, error) {
	if !w.mu.TryLock() {
		return false, nil
	}
	defer w.mu.Unlock()
	return true, w.err
}

// checkServices waits serviceGrace and fails when a service this deploy
// started has exited already, showing its last log lines. One a startup
// script's line asked for is that line failing, which in Kathara does not
// stop the lab: a warning naming the line, unless the deploy is strict.
func (d *deployer) checkServices() error {
	time.Sleep(serviceGrace)
	var bad []string
	for _, w := range d.services {
		done, err := w.exited()
		if !done {
			continue
		}
		if w.asked != "" && !d.m.Strict {
			d.warn("in %s, %s: the service it started exited at once (%v), and the lab goes on without it, as in Kathara%s", w.rec.Node, w.asked, err, lastLines(w.rec.Log))
			continue
		}
		bad = append(bad, fmt.Sprintf("service %q in %s exited at once (%v)%s", w.rec.Command, w.rec.Node, err, lastLines(w.rec.Log)))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// lastLines is the end of a log file, for an error message: ": its last
// lines: ..." or "" when it is empty.
func lastLines(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return fmt.Sprintf("; its last lines (%s):\n  %s", path, strings.Join(lines, "\n  "))
}
