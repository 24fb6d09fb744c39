package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// ErrBusy is returned when pktgen already runs in the namespace.
var ErrBusy = errors.New("pktgen is already running in this namespace")

// stopWait bounds how long a stopped run may take to return from "start"
// (the kernel polls its threads every 100 ms).
const stopWait = 5 * time.Second

// Controller drives pktgen in one network namespace. Every proc access
// happens on a locked thread inside that namespace, through
// /proc/thread-self/net/pktgen; the blocking "start" write gets a thread of
// its own. Build it with NewController; Close it when done.
type Controller struct {
	Namespace string // for messages

	files    procFiles
	run      func(func() error) error // on the namespace's worker thread
	runAlone func(func() error) error // on a new thread in the namespace
	load     func() error             // tries to load the pktgen module
	wake     func(tid int)            // interrupts the thread blocked in "start"
	closeFn  func()
}

// NewController returns a controller for namespace n. It opens a worker
// thread inside n; the caller keeps n open until Close.
func NewController(n *ns.NS) (*Controller, error) {
	w, err := n.Worker()
	if err != nil {
		return nil, err
	}
	return &Controller{
		Namespace: n.Name,
		files:     dirFiles{dir: DefaultDir},
		run:       w.Do,
		runAlone:  n.Do,
		load:      loadModule,
		wake:      wakeThread,
		closeFn:   w.Close,
	}, nil
}

// Close ends the controller's worker thread.
func (c *Controller) Close() {
	if c.closeFn != nil {
		c.closeFn()
		c.closeFn = nil
	}
}

// RunResult is a finished pktgen run: one status per device entry.
type RunResult struct {
	Devices []DeviceStatus
	Stopped bool // stopped by duration or cancel, not by count
}

// DeviceStatus is one device entry (one kpktgend thread) after a run.
type DeviceStatus struct {
	Name   string // e.g. veth1@0
	Thread int    // kpktgend number
	*Status
}

// Run validates the job, configures pktgen, starts it, stops it after the
// job's duration or when ctx is cancelled, and returns the parsed device
// files. pktgen is reset in the namespace on every return, also after an
// error. On cancel the result holds what was sent and the error wraps
// ctx.Err().
func (c *Controller) Run(ctx context.Context, job *Job) (*RunResult, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	return c.RunUnchecked(ctx, job)
}

// RunUnchecked is Run without validation, so tests can show that the kernel
// itself refuses what validation catches.
func (c *Controller) RunUnchecked(ctx context.Context, job *Job) (res *RunResult, err error) {
	if err := c.run(func() error { return c.preflight(job) }); err != nil {
		return nil, err
	}
	defer func() {
		if rerr := c.reset(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := c.run(func() error { return c.configure(job) }); err != nil {
		return nil, err
	}
	stopped, runErr := c.start(ctx, job.Duration)
	res = &RunResult{Stopped: stopped}
	for i, t := range job.ThreadNumbers() {
		name := job.DeviceName(i)
		var text string
		if err := c.run(func() error { var err error; text, err = c.files.read(name); return err }); err != nil {
			return res, fmt.Errorf("read pktgen results of %s: %w", name, err)
		}
		st, err := ParseStatus(text)
		if err != nil {
			return res, fmt.Errorf("pktgen results of %s: %w", name, err)
		}
		res.Devices = append(res.Devices, DeviceStatus{Name: name, Thread: t, Status: st})
	}
	return res, runErr
}

// preflight makes sure pktgen exists here (loading the module once if it
// does not), that the job's threads exist, and that nothing runs already.
// It runs on the namespace thread.
func (c *Controller) preflight(job *Job) error {
	names, err := c.files.list()
	if errors.Is(err, os.ErrNotExist) && c.load != nil {
		loadErr := c.load()
		if names, err = c.files.list(); errors.Is(err, os.ErrNotExist) {
			return missingPktgen(c.Namespace, loadErr)
		}
	}
	if err != nil {
		return fmt.Errorf("pktgen in namespace %s: %w", c.Namespace, err)
	}
	var threads []string
	for _, n := range names {
		if strings.HasPrefix(n, "kpktgend_") {
			threads = append(threads, n)
		}
	}
	sort.Strings(threads)
	for _, t := range job.ThreadNumbers() {
		if !contains(threads, "kpktgend_"+itoa(t)) {
			return fmt.Errorf("pktgen has no thread kpktgend_%d in namespace %s (it has %d, one per CPU): use fewer threads", t, c.Namespace, len(threads))
		}
	}
	for _, t := range threads {
		text, err := c.files.read(t)
		if err != nil {
			return fmt.Errorf("read %s: %w", t, err)
		}
		if th := ParseThread(text); len(th.Running) > 0 {
			return fmt.Errorf("%w %s (%s sends on %s): wait for it, or stop it with `echo stop > /proc/net/pktgen/pgctrl` there",
				ErrBusy, c.Namespace, t, strings.Join(th.Running, " "))
		}
	}
	return nil
}

// configure performs the job's writes, checking each device and thread
// write reads back "Result: OK:". It runs on the namespace thread.
func (c *Controller) configure(job *Job) error {
	for _, w := range job.Render() {
		if err := c.files.write(w.File, w.Cmd); err != nil {
			return fmt.Errorf("pktgen %q > %s in %s: %w", w.Cmd, w.File, c.Namespace, err)
		}
		if w.File == "pgctrl" {
			continue // pgctrl reports through the write's return only
		}
		text, err := c.files.read(w.File)
		if err != nil {
			return fmt.Errorf("read %s: %w", w.File, err)
		}
		if r := resultLine(text); !strings.HasPrefix(r, "OK:") {
			return fmt.Errorf("pktgen %q > %s in %s: kernel says %q", w.Cmd, w.File, c.Namespace, "Result: "+r)
		}
	}
	return nil
}

// resultLine returns the text after the last "Result:" of a proc file.
func resultLine(text string) string {
	i := strings.LastIndex(text, "Result:")
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(text[i+len("Result:"):], "\n")
	return strings.TrimSpace(line)
}

// start writes "start" from a thread of its own (the write blocks until the
// run ends) and stops the run after duration (if not zero) or on cancel. It
// reports whether the run was stopped rather than finished. It returns once
// no kpktgend thread of the namespace is running, so results are final.
func (c *Controller) start(ctx context.Context, duration time.Duration) (bool, error) {
	done := make(chan error, 1)
	tid := make(chan int, 1)
	go func() {
		done <- c.runAlone(func() error {
			tid <- unix.Gettid()
			return c.files.write("pgctrl", "start")
		})
	}()
	var deadline <-chan time.Time
	if duration > 0 {
		// Time the duration from when pktgen's threads really send: the
		// kernel starts them some time after the start write.
		if err := c.waitRunning(done); err != nil {
			return false, err
		}
		t := time.NewTimer(duration)
		defer t.Stop()
		deadline = t.C
	}
	var cause error
	select {
	case err := <-done:
		if err != nil {
			return false, fmt.Errorf("pktgen start in %s: %w", c.Namespace, err)
		}
		return false, c.waitIdle()
	case <-deadline:
	case <-ctx.Done():
		cause = ctx.Err()
	}
	if err := c.run(func() error { return c.files.write("pgctrl", "stop") }); err != nil {
		return true, fmt.Errorf("pktgen stop in %s: %w", c.Namespace, err)
	}
	// The start write notices the stop only at its next 100 ms poll of the
	// threads; a signal ends that sleep at once.
	if c.wake != nil {
		c.wake(<-tid)
	}
	if err := c.waitStopped(done); err != nil {
		return true, err
	}
	if cause != nil {
		return true, fmt.Errorf("pktgen run in %s stopped: %w", c.Namespace, cause)
	}
	return true, nil
}

// waitStopped waits, after a stop, for the start write to return and for
// every kpktgend thread to be idle. The write may return EINTR (the wake
// signal ended its sleep): that is how a stopped run ends.
func (c *Controller) waitStopped(done <-chan error) error {
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("pktgen start in %s, after stop: %w", c.Namespace, err)
		}
	case <-time.After(stopWait):
		return fmt.Errorf("pktgen in %s did not stop within %s", c.Namespace, stopWait)
	}
	return c.waitIdle()
}

// wakeThread sends SIGURG to one thread of this process: the Go runtime
// takes it as a harmless preemption request, and it makes the kernel's
// interruptible sleep in the "start" write return early.
func wakeThread(tid int) {
	// ESRCH: the write returned and its thread ended meanwhile; nothing
	// is left to wake.
	_ = unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
}

// waitRunning polls the thread files until a device runs, or the start
// write has returned already (a short count).
func (c *Controller) waitRunning(done chan error) error {
	deadline := time.Now().Add(stopWait)
	for time.Now().Before(deadline) {
		if len(done) > 0 {
			return nil
		}
		threads, err := c.Threads()
		if err != nil {
			return err
		}
		for _, th := range threads {
			if len(th.Running) > 0 {
				return nil
			}
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("pktgen in %s did not start within %s", c.Namespace, stopWait)
}

// waitIdle polls the thread files until no device is running (the kernel
// threads process a stop asynchronously).
func (c *Controller) waitIdle() error {
	deadline := time.Now().Add(stopWait)
	for {
		threads, err := c.Threads()
		if err != nil {
			return err
		}
		busy := false
		for _, th := range threads {
			busy = busy || len(th.Running) > 0
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pktgen in %s still running %s after stop", c.Namespace, stopWait)
		}
		time.Sleep(time.Millisecond)
	}
}

// reset removes every device from pktgen's threads in the namespace.
func (c *Controller) reset() error {
	if err := c.run(func() error { return c.files.write("pgctrl", "reset") }); err != nil {
		return fmt.Errorf("pktgen reset in %s: %w", c.Namespace, err)
	}
	return nil
}

// Threads reads the kpktgend_N files of the namespace.
func (c *Controller) Threads() (map[string]Thread, error) {
	out := map[string]Thread{}
	err := c.run(func() error {
		names, err := c.files.list()
		if err != nil {
			return err
		}
		for _, n := range names {
			if strings.HasPrefix(n, "kpktgend_") {
				text, err := c.files.read(n)
				if err != nil {
					return err
				}
				out[n] = ParseThread(text)
			}
		}
		return nil
	})
	return out, err
}
