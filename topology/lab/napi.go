package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// threadedNAPI puts ifc's receive work into napi kthreads pinned to cpus:
// GRO on (which gives a veth NAPI), threaded NAPI on, and the kthreads the
// kernel creates for ifc pinned. It runs on a thread inside the node's
// namespace that sees the node's sysfs, and returns the kthreads' pids.
//
// The kthreads are found as the napi/ threads that exist after threaded is
// written and did not before (the kernel creates them during the write);
// deploys are serialized by nslab's lock, and each must be named after ifc.
func threadedNAPI(ifc string, cpus spec.CPUSet, veth bool) ([]int, error) {
	if veth {
		if err := ethtool.SetGRO(ifc, true); err != nil {
			return nil, err
		}
	}
	before := napiThreads()
	if err := writeSysfs(filepath.Join("/sys/class/net", ifc, "threaded"), "1"); err != nil {
		return nil, err
	}
	var pids []int
	for pid, comm := range napiThreads() {
		if _, old := before[pid]; old || !strings.HasPrefix("napi/"+ifc+"-", commPrefix(comm)) {
			continue
		}
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return nil, fmt.Errorf("pin %s (pid %d) to cpu %s: %w", comm, pid, cpus, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("threaded NAPI is on, but no napi/%s kthread appeared (does its driver use NAPI?)", ifc)
	}
	slices.Sort(pids)
	return pids, nil
}

// commPrefix is the part of a kthread name that identifies the device:
// "napi/IF-ID" up to its last dash (names may be cut at 15 bytes on old
// kernels).
func commPrefix(comm string) string {
	if i := strings.LastIndex(comm, "-"); i > len("napi/") {
		return comm[:i+1]
	}
	return comm
}

// napiThreads lists the napi kthreads of the machine by pid.
func napiThreads() map[int]string {
	out := map[int]string{}
	paths, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(b), "napi/") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		out[pid] = strings.TrimSpace(string(b))
	}
	return out
}
