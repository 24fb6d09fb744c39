// Package stall finds the moments a CPU was taken away: a hypervisor
// that deschedules a vCPU (or an SMI, or a long stretch with interrupts
// off) stops everything on that CPU, its timer interrupts included.
// /proc/stat's steal is counted in clock ticks (10 ms) and added up at
// ticks, while a router's backlog of 1000 packets overflows in 4 ms at
// 250 kpps, so it cannot say which trial a stall fell in.
//
// A stall is seen as a hard hrtimer that expired late: a BPF program on
// the hrtimer_expire_entry tracepoint compares each hard timer's expiry
// time with the time it ran, and reports those later than Threshold. A
// busy CPU is not late this way: interrupts preempt the kernel and user
// space alike, even on a kernel built without preemption, whereas a
// thread's wake-up is late whenever a system call or softirq holds the
// CPU (which is why a real-time probe thread cannot tell the two apart).
// So that every CPU watched has a timer to be late, the watcher keeps one
// thread per CPU sleeping 1 ms at a time: a stall is seen to within a
// millisecond, for one timer interrupt per millisecond per CPU.
//
// A soft hrtimer (run from a softirq) is skipped: a busy softirq delays
// it without any stall. The lateness is taken from the timer's hard
// expiry, past any slack it was given.
package stall

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// Defaults of a watcher.
const (
	DefaultThreshold = time.Millisecond
	tick             = time.Millisecond // the watcher threads' sleep
)

// Stall is one stall of a CPU: from Start to End (CLOCK_MONOTONIC, as
// time.Time on the wall clock for reports), as long as its latest timer
// was late.
type Stall struct {
	CPU   int           `json:"cpu"`
	Start time.Time     `json:"start"`
	End   time.Time     `json:"end"`
	Late  time.Duration `json:"late_ns"`
}

// Watcher watches CPUs until Stop.
type Watcher struct {
	threshold time.Duration
	cpus      map[int]bool
	prog      *program
	rd        *ringbuf.Reader
	stop      chan struct{}
	wg        sync.WaitGroup
	mono      monoClock
	procs     int       // the Ps it added to GOMAXPROCS
	once      sync.Once // Stop's teardown
	seen      uint64    // expiries counted, at Stop
	closeErr  error
	mu        sync.Mutex // guards what read collects
	events    []event
	readErr   error
}

// Start watches cpus (threshold 0: DefaultThreshold), with a ticker
// thread on each of tick (a subset: a CPU kept busy has the kernel's own
// scheduler tick, a hard timer every 4 ms at HZ=250, and a thread there
// would take time from what keeps it busy). It needs BPF (raw
// tracepoints and kernel reads) and BTF; it says what is missing.
func Start(cpus, tick []int, threshold time.Duration) (*Watcher, error) {
	if threshold <= 0 {
		threshold = DefaultThreshold
	}
	prog, err := load(threshold)
	if err != nil {
		return nil, fmt.Errorf("stall watch: %w", err)
	}
	rd, err := ringbuf.NewReader(prog.events)
	if err != nil {
		prog.close()
		return nil, fmt.Errorf("stall watch: ring buffer: %w", err)
	}
	// Each ticker thread needs a P of the Go runtime every millisecond,
	// when it returns from its sleep; with no idle P it would take one
	// from a goroutine that needs it (the engine's pinned sender, which
	// then misses its schedule by milliseconds). Room for them.
	addProcs(len(tick))
	w := &Watcher{threshold: threshold, cpus: map[int]bool{}, prog: prog, rd: rd, stop: make(chan struct{}), mono: newMonoClock(), procs: len(tick)}
	for _, c := range cpus {
		w.cpus[c] = true
	}
	ready := make(chan error, len(tick))
	for _, c := range tick {
		w.wg.Add(1)
		go w.ticker(c, ready)
	}
	var errs []error
	for range tick {
		errs = append(errs, <-ready)
	}
	w.wg.Add(1)
	go w.read()
	if err := errors.Join(errs...); err != nil {
		_, _, _ = w.Stop() // the start's error is the one to report
		return nil, err
	}
	return w, nil
}

// ticker keeps a 1 ms timer armed on cpu, relative to now (a deadline
// already past when armed would look late).
func (w *Watcher) ticker(cpu int, ready chan<- error) {
	defer w.wg.Done()
	runtime.LockOSThread() // never unlocked: the pinned thread ends with it
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		ready <- fmt.Errorf("stall watch: pin a thread to cpu %d: %w", cpu, err)
		return
	}
	ready <- nil
	ts := unix.NsecToTimespec(tick.Nanoseconds())
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		_ = unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, nil) // EINTR: the next round sleeps again
	}
}

// read collects the program's events until Stop closes the reader.
func (w *Watcher) read() {
	defer w.wg.Done()
	for {
		rec, err := w.rd.Read()
		if errors.Is(err, ringbuf.ErrClosed) {
			return
		}
		if err != nil {
			w.mu.Lock()
			w.readErr = err
			w.mu.Unlock()
			return
		}
		if e, ok := decode(rec.RawSample); ok && w.cpus[e.cpu] {
			w.mu.Lock()
			w.events = append(w.events, e)
			w.mu.Unlock()
		}
	}
}

// Stop ends the watch and returns the stalls of the watched CPUs, merged
// (a stall delays every timer of its CPU: one stall, however many
// timers), in time order, and how many timer expiries of all CPUs the
// program saw.
func (w *Watcher) Stop() ([]Stall, uint64, error) {
	w.once.Do(func() {
		close(w.stop)
		w.seen = w.prog.seen()
		// The reader returns what is left before it reports ErrClosed.
		w.closeErr = w.rd.Close()
		w.wg.Wait()
		w.prog.close()
		addProcs(-w.procs)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mono.stalls(merge(w.events)), w.seen, errors.Join(w.closeErr, w.readErr)
}

// Window returns the stalls so far that ended from start to end, merged,
// while the watch goes on. Events still in the ring buffer (the program
// hands them over within microseconds) are not waited for.
func (w *Watcher) Window(start, end time.Time) []Stall {
	w.mu.Lock()
	evs := append([]event(nil), w.events...)
	w.mu.Unlock()
	var out []Stall
	for _, s := range w.mono.stalls(merge(evs)) {
		if !s.End.Before(start) && !s.End.After(end) {
			out = append(out, s)
		}
	}
	return out
}

// Threshold is the watcher's.
func (w *Watcher) Threshold() time.Duration { return w.threshold }

// event is one late hard hrtimer: on cpu, run at ran (CLOCK_MONOTONIC
// ns), late ns past its expiry.
type event struct {
	cpu       int
	ran, late int64
}

// span is a merged stall in monotonic ns.
type span struct {
	cpu        int
	start, end int64
	late       int64
}

// merge joins the events of each CPU whose late stretches overlap: each
// is the stretch [ran-late, ran] the CPU did not take its interrupt.
func merge(evs []event) []span {
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].cpu != evs[j].cpu {
			return evs[i].cpu < evs[j].cpu
		}
		return evs[i].ran-evs[i].late < evs[j].ran-evs[j].late
	})
	var out []span
	for _, e := range evs {
		start := e.ran - e.late
		if n := len(out); n > 0 && out[n-1].cpu == e.cpu && start <= out[n-1].end {
			last := &out[n-1]
			last.end = max(last.end, e.ran)
			last.late = last.end - last.start
			continue
		}
		out = append(out, span{cpu: e.cpu, start: start, end: e.ran, late: e.late})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// monoClock turns CLOCK_MONOTONIC ns into wall-clock times, from one
// reading of both.
type monoClock struct {
	wall time.Time
	mono int64
}

func newMonoClock() monoClock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for CLOCK_MONOTONIC
	return monoClock{wall: time.Now(), mono: ts.Nano()}
}

func (c monoClock) at(ns int64) time.Time { return c.wall.Add(time.Duration(ns - c.mono)) }

func (c monoClock) stalls(spans []span) []Stall {
	out := make([]Stall, len(spans))
	for i, s := range spans {
		out[i] = Stall{CPU: s.cpu, Start: c.at(s.start), End: c.at(s.end), Late: time.Duration(s.late)}
	}
	return out
}

// Summary is a watch's stalls in figures.
type Summary struct {
	CPUs      []int         `json:"cpus"`
	Stalls    int           `json:"stalls"`
	LongestNs time.Duration `json:"longest_ns"`
	TotalNs   time.Duration `json:"total_ns"`
	// ThresholdNs is the lateness from which a timer counts as stalled.
	ThresholdNs time.Duration `json:"threshold_ns"`
}

// Summarize sums stalls seen on cpus.
func Summarize(cpus []int, stalls []Stall, threshold time.Duration) Summary {
	s := Summary{CPUs: cpus, Stalls: len(stalls), ThresholdNs: threshold}
	for _, x := range stalls {
		s.LongestNs = max(s.LongestNs, x.Late)
		s.TotalNs += x.Late
	}
	return s
}

// procsMu serializes changes of GOMAXPROCS by watchers: several run at
// once (one per run measured together), each adding and taking back its
// own.
var procsMu sync.Mutex

func addProcs(n int) {
	procsMu.Lock()
	defer procsMu.Unlock()
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
}
