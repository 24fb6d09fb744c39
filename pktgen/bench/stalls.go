package bench

import (
	"fmt"
	"slices"

	"github.com/nslab/nslab/internal/caps"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stall"
	"github.com/nslab/nslab/topology/rootless"
)

// Stalls of the run's CPUs (package stall): one watch per bench, on each
// CPU the run places something on (every CPU this process may use when
// nothing is placed); each run takes the stalls that ended while its
// engine ran.

// maxStallList bounds the stalls a report lists one by one.
const maxStallList = 100

// startWatch starts the bench's stall watch; the note says why there is
// none when it cannot start (the bench goes on without).
func (b *Bench) startWatch() {
	c := caps.Or(b.opts.Caps)
	if c.EmulatedCPUs {
		b.watchNote = "stalls not watched: emulated CPUs (the VM harness)"
		return
	}
	if !c.BPF() {
		b.watchNote = "stalls not watched: " + rootless.Refuse("the stall watch (BPF)", "run as root to have it").Error()
		return
	}
	var cpus, tick []int
	for c := range b.place.Roles {
		cpus = append(cpus, c)
		// A ticker only where a node's receive work is placed: a pinned
		// sender keeps its CPU busy, so the kernel's own tick is a timer
		// there, and a thread waking every millisecond beside it made it
		// miss its schedule (1-3% short at 240 kpps).
		if !b.place.Sender.Contains(c) {
			tick = append(tick, c)
		}
	}
	if len(cpus) == 0 {
		// Nothing placed: every CPU, with the timers the kernel has (the
		// run keeps them busy); tickers here would take time from the run
		// on every CPU, and in an emulated VM slow it several times over.
		cpus = append(cpus, b.allowed...)
	}
	slices.Sort(cpus)
	slices.Sort(tick)
	w, err := stall.Start(cpus, tick, 0)
	if err != nil {
		b.watchNote = fmt.Sprintf("stalls not watched: %v", err)
		return
	}
	b.watch, b.watchCPUs = w, cpus
}

// stallsOf fills the report's stalls from the watch: those that ended
// while the engine ran.
func (b *Bench) stallsOf(rep *report.Report) {
	if b.watch == nil {
		rep.StallNote = b.watchNote
		return
	}
	in := b.watch.Window(rep.Started, rep.Ended)
	sum := stall.Summarize(b.watchCPUs, in, b.watch.Threshold())
	rep.Stalls, rep.StallList = &sum, in[:min(len(in), maxStallList)]
}
