package lab

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
)

// Stopping a lab's services: each recorded service that is still the same
// process (pid and start time), and any process that carries the lab's
// service mark (a service whose pid a killed deploy never recorded, or a
// program one of them started), gets SIGTERM with its process group, then
// SIGKILL after stopBound.

// stopBound is how long services get to exit after SIGTERM.
const stopBound = 3 * time.Second

// markedProcesses lists the processes whose environment carries lab
// labName's service mark, with their start times.
func markedProcesses(labName string) map[int]uint64 { return markedWith(labName + "/") }

// markedWith lists the processes whose service mark starts with prefix
// (LAB/: a lab's; LAB/NODE/: a node's), with their start times.
func markedWith(prefix string) map[int]uint64 {
	out := map[int]uint64{}
	for _, pid := range deployed.Marked(func(mark string) bool { return strings.HasPrefix(mark, prefix) }) {
		if start, err := deployed.ProcessStart(pid); err == nil {
			out[pid] = start
		}
	}
	return out
}

// stopServices stops lab labName's services (recorded in st, which may be
// nil, and marked) and returns how many processes it stopped. A lab whose
// deploy completed without services has none to find: /proc is scanned for
// marks only when the state is missing or incomplete, or lists services
// (whose programs may have started others).
func stopServices(labName string, st *state.State) (int, error) {
	scan := st == nil || st.Phase != state.PhaseDeployed || len(st.Services) > 0
	procs := map[int]uint64{}
	if scan {
		procs = markedProcesses(labName)
	}
	if st != nil {
		for _, s := range st.Services {
			if s.PID > 0 && deployed.Alive(s.PID, s.Start) {
				procs[s.PID] = s.Start
			}
		}
	}
	stopped := map[int]uint64{}
	// A program that starts others while it is stopped (a daemon's
	// watcher restarting it) is caught by scanning again.
	for round := 0; round < 3 && len(procs) > 0; round++ {
		stopAll(procs)
		for pid, start := range procs {
			stopped[pid] = start
		}
		if !scan {
			break
		}
		procs = markedProcesses(labName)
		for pid, start := range procs {
			if stopped[pid] == start {
				delete(procs, pid)
			}
		}
	}
	var left []string
	for pid, start := range stopped {
		if deployed.Alive(pid, start) {
			left = append(left, strconv.Itoa(pid))
		}
	}
	for pid := range procs {
		left = append(left, strconv.Itoa(pid))
	}
	if len(left) > 0 {
		return len(stopped), errors.New("services still running after SIGKILL: pid " + strings.Join(left, ", "))
	}
	return len(stopped), nil
}

// stopAll sends procs SIGTERM (with their process groups), waits up to
// stopBound, then SIGKILLs what is left.
func stopAll(procs map[int]uint64) {
	signal := func(sig syscall.Signal) {
		for pid, start := range procs {
			if deployed.Alive(pid, start) {
				_ = syscall.Kill(-pid, sig) // its process group, when it leads one
				_ = syscall.Kill(pid, sig)
			}
		}
	}
	signal(syscall.SIGTERM)
	for deadline := time.Now().Add(stopBound); time.Now().Before(deadline) && anyAlive(procs); {
		time.Sleep(20 * time.Millisecond)
	}
	if anyAlive(procs) {
		signal(syscall.SIGKILL)
		time.Sleep(50 * time.Millisecond)
	}
}

func anyAlive(procs map[int]uint64) bool {
	for pid, start := range procs {
		if deployed.Alive(pid, start) {
			return true
		}
	}
	return false
}
