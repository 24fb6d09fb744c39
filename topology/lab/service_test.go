package lab

import (
	"context"
	"errors"
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
