package lab

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
)

// serviceLab is pairYAML with one-shot commands and services in ns2.
func serviceLab(exec, run string) string {
	return strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    exec: "+exec+"\n    run: "+run+"\n", 1)
}

// TestPrivilegedServiceLifecycle: an exec: line runs in the node before
// the services, a service runs in the node's namespace (ip netns pids
// lists it) and is reported running by inspect, and destroy stops it and
// removes the logs.
func TestPrivilegedServiceLifecycle(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, serviceLab(`["ip -o addr show dev veth2 >&2"]`, `["sleep 1000"]`))
	f.deploy()
	st, err := f.m.loadState(f.lab.Name)
	if err != nil || len(st.Services) != 1 || st.Services[0].PID == 0 {
		t.Fatalf("state services %+v %v", st.Services, err)
	}
	pid := st.Services[0].PID
	if b, err := os.ReadFile(logPath(f.m.stateDir(), f.lab.Name, "ns2", "exec", 0)); err != nil || !strings.Contains(string(b), "192.168.1.12/24") {
		t.Errorf("the exec line did not run in ns2: %q %v", b, err)
	}
	if out, err := exec.Command("ip", "netns", "pids", f.ns("ns2")).Output(); err == nil {
		if !strings.Contains(" "+strings.Join(strings.Fields(string(out)), " ")+" ", " "+strconv.Itoa(pid)+" ") {
			t.Errorf("ip netns pids %s = %q, want pid %d", f.ns("ns2"), out, pid)
		}
	} else { // no iproute2 (the VM): compare the namespaces directly
		var st1, st2 unix.Stat_t
		_ = unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &st1)
		_ = unix.Stat(f.m.netnsDir()+"/"+f.ns("ns2"), &st2)
		if st1.Ino == 0 || st1.Ino != st2.Ino {
			t.Errorf("service pid %d is in namespace %d, ns2 is %d", pid, st1.Ino, st2.Ino)
		}
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil || len(info.Services) != 1 || !info.Services[0].Running {
		t.Fatalf("inspect services %+v %v", info.Services, err)
	}
	rep, err := f.m.Destroy(f.lab.Name)
	if err != nil || rep.Stopped < 1 {
		t.Fatalf("destroy: %+v %v", rep, err)
	}
	if deployed.Alive(pid, st.Services[0].Start) {
		t.Errorf("service pid %d still runs after destroy", pid)
	}
	if _, err := os.Stat(logPath(f.m.stateDir(), f.lab.Name, "ns2", "run", 0)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("logs left: %v", err)
	}
	f.assertGone()
}

// TestPrivilegedServiceExitsAtOnce: a service that exits at once fails the
// deploy, which rolls back (the other service stopped too) and shows the
// program's last lines.
func TestPrivilegedServiceExitsAtOnce(t *testing.T) {
	f := newFixture(t, serviceLab(`[]`, `["sleep 1000", "echo port 80 is in use >&2; exit 3"]`))
	_, err := f.m.Deploy(context.Background(), f.lab)
	var se *StepError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "exited at once (exit status 3)") || !strings.Contains(err.Error(), "port 80 is in use") {
		t.Fatalf("got %v", err)
	}
	if left := markedProcesses(f.lab.Name); len(left) > 0 {
		t.Errorf("processes left after the rollback: %v", left)
	}
	f.assertGone()
}

// TestPrivilegedExecFails: an exec: line that exits non-zero fails the
// deploy with its status and output, and the deploy rolls back.
func TestPrivilegedExecFails(t *testing.T) {
	f := newFixture(t, serviceLab(`["echo no such table >&2; exit 2"]`, `["sleep 1000"]`))
	_, err := f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "failed (exit status 2)") || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("got %v", err)
	}
	f.assertGone()
}

// TestPrivilegedUnrecordedServiceStopped: a process carrying the lab's
// service mark whose pid the state never got (a deploy killed between
// starting it and recording it: the state says deploying) is stopped by
// destroy too; one with another lab's mark is left alone.
func TestPrivilegedUnrecordedServiceStopped(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, pairYAML)
	f.deploy()
	st, err := f.m.loadState(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	st.Phase, st.PID = state.PhaseDeploying, 0 // as a deploy killed midway leaves it
	if err := f.m.saveState(st); err != nil {
		t.Fatal(err)
	}
	start := func(tag string) *exec.Cmd {
		cmd := exec.Command("sleep", "1000")
		cmd.Env = append(os.Environ(), deployed.ServiceEnv+"="+tag)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	ours := start(f.lab.Name + "/ns2/0")
	other := start(f.lab.Name + "x/ns2/0") // a lab whose name starts like this one's
	rep, err := f.m.Destroy(f.lab.Name)
	if err != nil || rep.Stopped != 1 {
		t.Fatalf("destroy: %+v %v", rep, err)
	}
	if err := ours.Wait(); err == nil {
		t.Errorf("the marked process exited cleanly: it was not stopped")
	}
	if err := other.Process.Signal(unix.Signal(0)); err != nil {
		t.Errorf("another lab's service was stopped: %v", err)
	}
}

// escapingLines are exec lines that leave a daemon behind in the node the
// ways a service script or a user does, none of them carrying the lab's
// service mark or recorded as a service: setsid, a double fork, env -i,
// start-stop-daemon --background (what /etc/init.d scripts and service
// run), and one that ignores SIGTERM. Each sleeps for tag seconds, which
// names it in /proc.
func escapingLines(tag, pidfile string) []string {
	return []string{
		"setsid sleep " + tag + " >/dev/null 2>&1 < /dev/null &",
		"(sleep " + tag + " >/dev/null 2>&1 < /dev/null &) &",
		"env -i /bin/sleep " + tag + " >/dev/null 2>&1 < /dev/null &",
		"start-stop-daemon --start --background --make-pidfile --pidfile " + pidfile + " --exec /bin/sleep -- " + tag,
		`env -i setsid sh -c 'trap "" TERM; exec sleep ` + tag + `' >/dev/null 2>&1 < /dev/null &`,
		// The lines return before their daemons run: the deploy goes on
		// once all five do (the pattern does not match this line's shell).
		`for i in $(seq 1000); do [ "$(pgrep -c -f '^(/bin/)?sleep ` + tag + `$')" -ge 5 ] && break; sleep 0.05; done`,
	}
}

// sleepers are the processes running sleep tag.
func sleepers(t *testing.T, tag string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasSuffix(string(b), "\x00"+tag+"\x00") && strings.Contains(string(b), "sleep\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// quoteLines is lines as the YAML flow list of an exec: key.
func quoteLines(lines []string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = strconv.Quote(l)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestPrivilegedEscapedProcessesStopped: daemons an exec line leaves in a
// node through setsid, a double fork, env -i and start-stop-daemon are
// recorded nowhere, and those started with env -i carry no mark of the
// lab's, yet destroy stops every one (they are in the node's namespace),
// and names the one that ignored SIGTERM and had to be killed.
func TestPrivilegedEscapedProcessesStopped(t *testing.T) {
	labtest.CoveredOnHost(t)
	if _, err := exec.LookPath("start-stop-daemon"); err != nil {
		t.Skip("no start-stop-daemon here (dpkg brings it)")
	}
	tag := strconv.Itoa(100000 + rand.IntN(100000))
	f := newFixture(t, serviceLab(quoteLines(escapingLines(tag, "/tmp/sleep-"+tag+".pid")), `[]`))
	t.Cleanup(func() {
		for _, pid := range sleepers(t, tag) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	})
	f.deploy()
	before := sleepers(t, tag)
	if len(before) != 5 {
		t.Fatalf("%d of the 5 daemons started: pids %v", len(before), before)
	}
	marked := markedProcesses(f.lab.Name)
	unmarked := 0
	for _, pid := range before {
		if _, ok := marked[pid]; !ok {
			unmarked++
		}
	}
	if unmarked < 2 {
		t.Fatalf("the premise fails: %d of the sleeps carry no mark of the lab's, want the two env -i cleared (marked: %v)", unmarked, marked)
	}
	rep, err := f.m.Destroy(f.lab.Name)
	if err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if left := sleepers(t, tag); len(left) > 0 {
		t.Errorf("processes left after destroy: %v (of %v)", left, before)
	}
	if rep.Stopped < 5 {
		t.Errorf("destroy stopped %d processes, want the 5", rep.Stopped)
	}
	if len(rep.Killed) != 1 || !strings.Contains(rep.Killed[0], "(sleep) in namespace "+f.ns("ns2")) {
		t.Errorf("killed %q, want the one sleep that ignored SIGTERM, in %s", rep.Killed, f.ns("ns2"))
	}
	var text strings.Builder
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "  killed: pid ") {
		t.Errorf("destroy's text does not name the process killed:\n%s", text.String())
	}
	f.assertGone()
}

// TestPrivilegedEscapedProcessesRolledBack: the same daemons, then a
// line that fails: the deploy rolls back and leaves none of them.
func TestPrivilegedEscapedProcessesRolledBack(t *testing.T) {
	labtest.CoveredOnHost(t)
	if _, err := exec.LookPath("start-stop-daemon"); err != nil {
		t.Skip("no start-stop-daemon here (dpkg brings it)")
	}
	tag := strconv.Itoa(200000 + rand.IntN(100000))
	lines := append(escapingLines(tag, "/tmp/sleep-"+tag+".pid"), "echo the table is gone >&2; exit 4")
	f := newFixture(t, serviceLab(quoteLines(lines), `[]`))
	t.Cleanup(func() {
		for _, pid := range sleepers(t, tag) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	})
	_, err := f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "the table is gone") {
		t.Fatalf("deploy: %v, want the last line's failure", err)
	}
	if left := sleepers(t, tag); len(left) > 0 {
		t.Errorf("processes left after the rollback: %v", left)
	}
	f.assertGone()
}
