package bench

import (
	"os"
	"runtime"
	"strconv"

	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// onCPU runs fn on a locked thread pinned to cpu (when cpu >= 0). It
// must run on a goroutine of its own: the thread's affinity is put back
// before the thread is released, and when that fails the goroutine ends
// locked, so that the runtime discards the thread.
func onCPU(cpu int, fn func()) {
	if cpu < 0 {
		fn()
		return
	}
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if unix.SchedGetaffinity(0, &old) != nil {
		fn() // unpinned; the thread is discarded with its goroutine
		return
	}
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set) // unpinned if refused: the sampler still samples
	fn()
	if unix.SchedSetaffinity(0, &old) == nil {
		runtime.UnlockOSThread()
	}
}

// confine keeps every thread of this process (the Go runtime's included)
// off the CPUs the lab placed nodes on, while a run lasts, so that nslab's
// own work never competes with a node under test; threads pinned to CPUs of
// their own (the sender's) pin themselves after. It does nothing when that
// would leave no CPU. The returned function puts every thread back on the
// CPUs the process may use.
func confine(p account.Placement, allowed spec.CPUSet) func() {
	var nodes spec.CPUSet
	for _, set := range p.ByNode {
		nodes = append(nodes, set...)
	}
	var rest spec.CPUSet
	for _, c := range allowed {
		if !nodes.Contains(c) {
			rest = append(rest, c)
		}
	}
	if len(nodes) == 0 || len(rest) == 0 {
		return func() {}
	}
	setAll(rest)
	return func() { setAll(allowed) }
}

// setAll sets the affinity of every thread of this process.
func setAll(cpus spec.CPUSet) {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.SchedSetaffinity(tid, &set) // a thread that just ended is no matter
		}
	}
}
