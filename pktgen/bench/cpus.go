package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// placement is where a run's parts are on the machine's CPUs: the sender
// threads, each placed node on the path, and nslab's own sampler.
type placement struct {
	roles   map[int][]string // CPU -> what runs there ("sender ns1", "router ns2")
	byNode  map[string]spec.CPUSet
	napi    map[string]bool // nodes whose receive work runs in pinned napi kthreads
	sender  spec.CPUSet     // the sender threads' CPUs; empty: not pinned
	sampler int             // the sampler's CPU; -1: not pinned
	note    string          // where the sampler is, and why
}

// placementOf reads the placement of traffic t along path from the lab,
// and picks a CPU for the sampler off the CPUs it measures, where the
// machine has one.
func placementOf(l *spec.Lab, path *walk.Path, t *spec.Traffic, allowed spec.CPUSet) placement {
	p := placement{roles: map[int][]string{}, byNode: map[string]spec.CPUSet{}, napi: map[string]bool{}, sender: t.CPUs, sampler: -1}
	for _, c := range t.CPUs {
		p.roles[c] = append(p.roles[c], "sender "+t.From.Node)
	}
	for i, h := range path.Hops {
		n := l.Node(h.Node)
		if i == 0 || n == nil || !n.Placed() {
			continue
		}
		role := "router"
		switch {
		case i == len(path.Hops)-1:
			role = "receiver"
		case h.L2:
			role = "switch"
		}
		p.byNode[h.Node] = n.CPUs
		// Its receive work runs in pinned napi kthreads, which a full
		// NAPI ring shows: receive: napi, or an XDP fast path on a placed
		// node (topology/lab threads its NAPI).
		p.napi[h.Node] = n.Placed() && (n.Receive == spec.ReceiveNAPI || n.Forwarding.FastPath == spec.FastPathXDP)
		for _, c := range n.CPUs {
			p.roles[c] = append(p.roles[c], role+" "+h.Node)
		}
	}
	p.pickSampler(allowed)
	return p
}

// pickSampler puts the sampler on an allowed CPU where nothing measured
// runs; failing that, with the sender (whose rate it then slows, rather
// than the node under test); failing that, nowhere in particular.
func (p *placement) pickSampler(allowed spec.CPUSet) {
	for _, c := range allowed {
		if len(p.roles[c]) == 0 && len(p.roles) > 0 {
			p.sampler, p.note = c, fmt.Sprintf("nslab's sampler ran on cpu%d, where nothing it measures runs", c)
			break
		}
	}
	if p.sampler < 0 && len(p.sender) > 0 && allowed.Contains(p.sender[0]) {
		p.sampler = p.sender[0]
		p.note = fmt.Sprintf("nslab's sampler shared cpu%d with the sender: every allowed CPU (%s) runs something it measures", p.sampler, allowed)
	}
	if p.sampler < 0 {
		p.note = "nslab's sampler was not pinned (no placement in the lab)"
		return
	}
	p.roles[p.sampler] = append(p.roles[p.sampler], "nslab sampler")
}

// label puts the placement's roles on the per-CPU table.
func (p placement) label(cpus []report.CPUUse) {
	for i := range cpus {
		cpus[i].Roles = p.roles[cpus[i].N]
	}
}

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
func (p placement) confine(allowed spec.CPUSet) func() {
	var nodes spec.CPUSet
	for _, set := range p.byNode {
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
