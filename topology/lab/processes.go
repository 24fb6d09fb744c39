package lab

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
)

// Stopping a lab's processes: each recorded service that is still the
// same process (pid and start time), any process that carries the lab's
// service mark (a service whose pid a killed deploy never recorded, or a
// program one of them started), any process in one of the lab's network
// namespaces, and their descendants, gets SIGTERM with its process group,
// then SIGKILL after stopBound.

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

// stopServices stops lab labName's processes and returns how many it
// stopped and which of them had to be killed. They are found four ways:
// the services st records (st may be nil) that are still the same
// process; those carrying the lab's service mark; every process whose
// network namespace is one of netns (the lab's, by inode: a daemon a
// startup line started through service, setsid, a double fork or env -i,
// which no mark or record finds); and the descendants of all of these.
// /proc is scanned for marks only when the state is missing or
// incomplete, or lists services (whose programs may have started others);
// for namespaces always. What is still there after SIGKILL is an error
// naming it.
func stopServices(labName string, st *state.State, netns map[uint64]string) (int, []string, error) {
	f := processFinder{lab: labName, netns: netns, marks: st == nil || st.Phase != state.PhaseDeployed || len(st.Services) > 0}
	procs := f.find()
	if st != nil {
		for _, s := range st.Services {
			if _, ok := procs[s.PID]; !ok && s.PID > 0 && deployed.Alive(s.PID, s.Start) {
				hp, _ := readProcess(s.PID) // gone meanwhile: no name, and stopAll finds it gone
				procs[s.PID] = labProcess{start: s.Start, comm: cmp.Or(hp.comm, "?"), where: "service of node " + s.Node}
			}
		}
	}
	stopped := map[int]labProcess{}
	var killed []string
	// A program that starts others while it is stopped (a daemon's
	// watcher restarting it) is caught by scanning again.
	for round := 0; round < 3 && len(procs) > 0; round++ {
		starts := map[int]uint64{}
		for pid, lp := range procs {
			starts[pid] = lp.start
			stopped[pid] = lp
		}
		for _, pid := range stopAll(starts) {
			killed = append(killed, procs[pid].String(pid))
		}
		procs = f.find()
		for pid, lp := range procs {
			if was, ok := stopped[pid]; ok && was.start == lp.start {
				delete(procs, pid)
			}
		}
	}
	sort.Strings(killed)
	if left := stillRunning(stopped, procs); len(left) > 0 {
		return len(stopped), killed, errors.New("processes of the lab still running after SIGKILL: " + strings.Join(left, "; "))
	}
	return len(stopped), killed, nil
}

// A processFinder finds a lab's processes: those with its mark (when
// marks), those in its network namespaces (netns, by inode), and their
// descendants.
type processFinder struct {
	lab   string
	netns map[uint64]string
	marks bool
}

func (f processFinder) find() map[int]labProcess {
	procs := map[int]labProcess{}
	if f.marks {
		for pid, start := range markedProcesses(f.lab) {
			procs[pid] = labProcess{start: start, where: "with the lab's mark"}
		}
	}
	host := hostProcesses()
	for _, p := range host {
		if name, ok := f.netns[p.netns]; ok && p.netns != 0 {
			procs[p.pid] = labProcess{start: p.start, where: "in namespace " + name}
		}
	}
	comms := make(map[int]string, len(host))
	for _, p := range host {
		comms[p.pid] = p.comm
	}
	for pid, lp := range procs {
		lp.comm = cmp.Or(comms[pid], "?")
		procs[pid] = lp
	}
	addDescendants(procs, host)
	return procs
}

// stillRunning names the processes of stopped still alive, and those of
// found (found after the last round), sorted.
func stillRunning(stopped, found map[int]labProcess) []string {
	var left []string
	for pid, lp := range stopped {
		if deployed.Alive(pid, lp.start) {
			left = append(left, lp.String(pid))
		}
	}
	for pid, lp := range found {
		left = append(left, lp.String(pid))
	}
	sort.Strings(left)
	return left
}

// A labProcess is a process stopServices found: its start time (to know
// it is still the same process), its command name and how it was found.
type labProcess struct {
	start uint64
	comm  string
	where string
}

// String names the process as the lines of a destroy do.
func (p labProcess) String(pid int) string {
	return fmt.Sprintf("pid %d (%s) %s", pid, p.comm, p.where)
}

// A hostProcess is a process as /proc shows it.
type hostProcess struct {
	pid, ppid int
	start     uint64
	comm      string
	netns     uint64 // its network namespace's inode (0: unreadable)
}

// hostProcesses lists the machine's processes but this one, from /proc.
func hostProcesses() []hostProcess {
	ents, _ := os.ReadDir("/proc") // unreadable /proc: nothing found
	out := make([]hostProcess, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		hp, err := readProcess(pid)
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, hp)
	}
	return out
}

// readProcess reads process pid's /proc/PID/stat (its command name,
// parent and start time) and the inode of its network namespace.
func readProcess(pid int) (hostProcess, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return hostProcess{}, err
	}
	// The command name (field 2) is in parentheses and may hold any
	// character: the fields after it count from its last ")".
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return hostProcess{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return hostProcess{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	hp := hostProcess{pid: pid, comm: string(b[open+1 : end])}
	if hp.ppid, err = strconv.Atoi(f[1]); err != nil { // field 4
		return hostProcess{}, fmt.Errorf("/proc/%d/stat: parent: %w", pid, err)
	}
	if hp.start, err = strconv.ParseUint(f[19], 10, 64); err != nil { // field 22
		return hostProcess{}, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil {
		hp.netns = st.Ino
	}
	return hp, nil
}

// addDescendants adds to procs every process of host descended from one
// of them (a program a service started that moved to a namespace of its
// own).
func addDescendants(procs map[int]labProcess, host []hostProcess) {
	children := map[int][]hostProcess{}
	for _, p := range host {
		children[p.ppid] = append(children[p.ppid], p)
	}
	queue := make([]int, 0, len(procs))
	for pid := range procs {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range children[parent] {
			if _, ok := procs[c.pid]; ok {
				continue
			}
			procs[c.pid] = labProcess{start: c.start, comm: c.comm, where: fmt.Sprintf("started by pid %d", parent)}
			queue = append(queue, c.pid)
		}
	}
}

// holders names the processes but this one that hold one of the network
// namespaces netns: as their own namespace or by an open descriptor. A namespace unmounted by a destroy lives on
// while one holds it.
func holders(netns map[uint64]string) []string {
	if len(netns) == 0 {
		return nil
	}
	var out []string
	for _, p := range hostProcesses() {
		held := map[string]bool{}
		if name, ok := netns[p.netns]; ok {
			held[name] = true
		}
		dir := fmt.Sprintf("/proc/%d/fd", p.pid)
		fds, _ := os.ReadDir(dir) // gone meanwhile, or not ours to read: nothing held that we can see
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(dir, fd.Name()))
			var ino uint64
			if err == nil && strings.HasPrefix(target, "net:[") {
				if _, err := fmt.Sscanf(target, "net:[%d]", &ino); err == nil && netns[ino] != "" {
					held[netns[ino]] = true
				}
			}
		}
		if len(held) == 0 {
			continue
		}
		names := make([]string, 0, len(held))
		for n := range held {
			names = append(names, n)
		}
		sort.Strings(names)
		out = append(out, fmt.Sprintf("pid %d (%s) holds %s", p.pid, p.comm, strings.Join(names, ", ")))
	}
	return out
}

// stopAll sends procs SIGTERM (with their process groups), waits up to
// stopBound, then SIGKILLs what is left and returns their pids.
func stopAll(procs map[int]uint64) []int {
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
	var killed []int
	for pid, start := range procs {
		if deployed.Alive(pid, start) {
			killed = append(killed, pid)
		}
	}
	if len(killed) > 0 {
		signal(syscall.SIGKILL)
		// A killed process is gone once the kernel has torn it down,
		// which a loaded machine takes its time over (a daemon's
		// memory, its sockets): wait for that, within a bound, rather
		// than a fixed moment.
		for deadline := time.Now().Add(killBound); time.Now().Before(deadline) && anyAlive(procs); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return killed
}

// killBound bounds the wait for SIGKILLed processes to be gone.
const killBound = 10 * time.Second

func anyAlive(procs map[int]uint64) bool {
	for pid, start := range procs {
		if deployed.Alive(pid, start) {
			return true
		}
	}
	return false
}
