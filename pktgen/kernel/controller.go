package kernel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
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
	stopped, runErr := c.start(ctx, job)
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
// write reads back "Result: OK:". The resets among them go through
// clearThreads. It runs on the namespace thread.
func (c *Controller) configure(job *Job) error {
	for _, w := range job.Render() {
		switch {
		case w == Write{"pgctrl", "reset"}:
			if err := c.clearThreads(nil); err != nil {
				return err
			}
			continue
		case w.Cmd == "rem_device_all":
			if err := c.clearThreads([]string{w.File}); err != nil {
				return err
			}
			continue
		}
		if err := c.files.write(w.File, w.Cmd); err != nil {
			return fmt.Errorf("pktgen %q > %s in %s: %w", w.Cmd, w.File, c.Namespace, err)
		}
		if err := c.checkResult(w); err != nil {
			return err
		}
	}
	return nil
}

// checkResult reads back the file a write went to and requires the
// kernel's "Result: OK:". pgctrl reports through the write's return only.
// It runs on the namespace thread.
func (c *Controller) checkResult(w Write) error {
	if w.File == "pgctrl" {
		return nil
	}
	text, err := c.files.read(w.File)
	if err != nil {
		return fmt.Errorf("read %s: %w", w.File, err)
	}
	if r := resultLine(text); !strings.HasPrefix(r, "OK:") {
		return fmt.Errorf("pktgen %q > %s in %s: kernel says %q", w.Cmd, w.File, c.Namespace, "Result: "+r)
	}
	return nil
}

// clearThreads removes every device from the named kpktgend threads (all of
// them when names is nil) and waits until their kernel threads have done
// it. A reset or rem_device_all write only posts a request that the thread
// takes up at its next poll, which can come after the write returned and
// after the next add_device: the late removal then takes the new device
// away, mid-run. So a thread that holds no device is not written to (a
// request left pending there would be that late removal), and one that
// does is waited for until its lists are empty. It runs on the namespace
// thread.
func (c *Controller) clearThreads(names []string) error {
	threads, err := c.readThreads()
	if err != nil {
		return err
	}
	var held []string
	for _, name := range slices.Sorted(maps.Keys(threads)) {
		th := threads[name]
		if (names != nil && !contains(names, name)) || len(th.Running)+len(th.Stopped) == 0 {
			continue
		}
		if err := c.files.write(name, "rem_device_all"); err != nil {
			return fmt.Errorf("pktgen rem_device_all > %s in %s: %w", name, c.Namespace, err)
		}
		held = append(held, name)
	}
	deadline := time.Now().Add(stopWait)
	for len(held) > 0 {
		threads, err := c.readThreads()
		if err != nil {
			return err
		}
		th := threads[held[0]]
		if devs := append(th.Running, th.Stopped...); len(devs) > 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("pktgen in %s: %s still holds %s %s after rem_device_all", c.Namespace, held[0], strings.Join(devs, " "), stopWait)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		held = held[1:]
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

// start writes "start" from a thread of its own and stops the run after
// the job's duration (if not zero) or on cancel. It reports whether the run
// was stopped rather than finished. It returns once no kpktgend thread of
// the namespace runs, so results are final.
//
// The write posts the start to the kernel threads, waits 125 ms for them to
// take it up and then blocks while any of them runs. A thread that takes it
// up later leaves the write to return at once, before the run: so the run's
// beginning is read from the device files, and its end from the thread
// files, not from the write.
func (c *Controller) start(ctx context.Context, job *Job) (bool, error) {
	done := make(chan error, 1)
	tid := make(chan int, 1)
	go func() {
		done <- c.runAlone(func() error {
			tid <- unix.Gettid()
			return c.files.write("pgctrl", "start")
		})
	}()
	returned, err := c.waitTaken(job, done)
	if err != nil {
		return false, err
	}
	if returned {
		done = nil // nothing left to wait for or to wake
	}
	var deadline <-chan time.Time
	if job.Duration > 0 {
		// Timed from when the threads send.
		t := time.NewTimer(job.Duration)
		defer t.Stop()
		deadline = t.C
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		var polled <-chan time.Time
		if done == nil {
			polled = poll.C
		}
		select {
		case err := <-done:
			if err != nil {
				return false, fmt.Errorf("pktgen start in %s: %w", c.Namespace, err)
			}
			done = nil
			if idle, err := c.idle(); idle || err != nil {
				return false, err
			}
		case <-polled:
			if idle, err := c.idle(); idle || err != nil {
				return false, err
			}
		case <-deadline:
			return true, c.stop(done, tid, nil)
		case <-ctx.Done():
			return true, c.stop(done, tid, ctx.Err())
		}
	}
}

// stop ends a run early. done is the start write's channel, nil when the
// write has returned already; cause, when not nil, is why (a cancel).
func (c *Controller) stop(done <-chan error, tid <-chan int, cause error) error {
	if err := c.run(func() error { return c.files.write("pgctrl", "stop") }); err != nil {
		return fmt.Errorf("pktgen stop in %s: %w", c.Namespace, err)
	}
	if done == nil {
		if err := c.waitIdle(); err != nil {
			return err
		}
	} else {
		// The start write notices the stop only at its next 100 ms poll
		// of the threads; a signal ends that sleep at once.
		if c.wake != nil {
			c.wake(<-tid)
		}
		if err := c.waitStopped(done); err != nil {
			return err
		}
	}
	if cause != nil {
		return fmt.Errorf("pktgen run in %s stopped: %w", c.Namespace, cause)
	}
	return nil
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

// waitTaken polls the device files until every device of the job has been
// taken up by its thread (its start time is set, or the kernel says
// "Error starting"). It reports whether the start write has returned
// meanwhile; an error of that write ends the wait.
func (c *Controller) waitTaken(job *Job, done <-chan error) (returned bool, err error) {
	deadline := time.Now().Add(stopWait)
	for {
		select {
		case err := <-done:
			if err != nil {
				return true, fmt.Errorf("pktgen start in %s: %w", c.Namespace, err)
			}
			returned, done = true, nil
		default:
		}
		taken, err := c.taken(job)
		if taken || err != nil {
			return returned, err
		}
		if time.Now().After(deadline) {
			return returned, fmt.Errorf("pktgen in %s did not start within %s", c.Namespace, stopWait)
		}
		time.Sleep(time.Millisecond)
	}
}

// taken reports whether every device of the job has been taken up by its
// kernel thread.
func (c *Controller) taken(job *Job) (bool, error) {
	var all = true
	err := c.run(func() error {
		for i := range job.ThreadNumbers() {
			text, err := c.files.read(job.DeviceName(i))
			if err != nil {
				return fmt.Errorf("read %s: %w", job.DeviceName(i), err)
			}
			st, err := ParseStatus(text)
			if err != nil {
				return fmt.Errorf("pktgen %s: %w", job.DeviceName(i), err)
			}
			all = all && (st.StartedUS > 0 || st.Result.Text == "Error starting")
		}
		return nil
	})
	return all, err
}

// idle reports whether no kpktgend thread of the namespace runs a device.
func (c *Controller) idle() (bool, error) {
	threads, err := c.Threads()
	if err != nil {
		return false, err
	}
	for _, th := range threads {
		if len(th.Running) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// waitIdle polls the thread files until no device is running (the kernel
// threads process a stop asynchronously).
func (c *Controller) waitIdle() error {
	deadline := time.Now().Add(stopWait)
	for {
		idle, err := c.idle()
		if idle || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pktgen in %s still running %s after stop", c.Namespace, stopWait)
		}
		time.Sleep(time.Millisecond)
	}
}

// reset removes every device from pktgen's threads in the namespace and
// waits until they are gone.
func (c *Controller) reset() error {
	return c.run(func() error { return c.clearThreads(nil) })
}

// Threads reads the kpktgend_N files of the namespace.
func (c *Controller) Threads() (map[string]Thread, error) {
	var out map[string]Thread
	err := c.run(func() error {
		var err error
		out, err = c.readThreads()
		return err
	})
	return out, err
}

// readThreads reads the kpktgend_N files. It runs on the namespace thread.
func (c *Controller) readThreads() (map[string]Thread, error) {
	names, err := c.files.list()
	if err != nil {
		return nil, err
	}
	out := map[string]Thread{}
	for _, n := range names {
		if strings.HasPrefix(n, "kpktgend_") {
			text, err := c.files.read(n)
			if err != nil {
				return nil, err
			}
			out[n] = ParseThread(text)
		}
	}
	return out, nil
}
