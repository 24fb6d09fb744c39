package ns

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// init keeps the main goroutine on the main thread for the life of the
// program, so that no other goroutine ever runs there. The threads this
// package sends into other namespaces, or gives a mount namespace of
// their own, are discarded when they cannot go home; the main thread
// cannot be discarded (Go parks it instead), and /proc/self, which some
// readers use, shows the main thread's namespaces.
func init() { runtime.LockOSThread() }

// ProcWriter writes /proc/sys of network namespaces from one thread that
// has a mount namespace of its own, made once, where it mounts a new proc
// file system for each namespace it enters. In the host's /proc every
// network namespace that was ever looked at leaves its own dentries for
// /proc/sys/net, all in one hash chain, so each open there walks them all:
// a lab of 3,000 namespaces spent 11 s of its deploy in open(2). A new proc
// mount has none; the writer mounts one for every procReuse namespaces. A mount namespace per call would cost a copy of the
// host's mounts each time, and a lab adds one mount per namespace under
// /run/netns; this one is copied once, made private (nothing propagates
// into it), and lives until Close.
type ProcWriter struct {
	reqs chan procReq
	done chan struct{}
	err  error // why the thread could not start; then every Do fails with it
}

type procReq struct {
	fd    int
	name  string
	fn    func() error
	reply chan error
	// batch: a DoAll; done counts the jobs that ran to their end.
	batch []ProcJob
	done  *int
}

// NewProcWriter starts the writer's thread.
func NewProcWriter() *ProcWriter {
	w := &ProcWriter{reqs: make(chan procReq), done: make(chan struct{})}
	started := make(chan struct{})
	go w.loop(started)
	<-started
	return w
}

func (w *ProcWriter) loop(started chan struct{}) {
	runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
	defer close(w.done)
	w.err = privateMounts()
	close(started)
	served := 0 // namespaces the current proc mount has served
	for r := range w.reqs {
		if r.batch == nil {
			r.reply <- w.enter(r, &served)
			continue
		}
		var err error
		for _, j := range r.batch {
			if err = w.enter(procReq{fd: j.FD, name: j.Name, fn: j.Fn}, &served); err != nil {
				break
			}
			*r.done++
		}
		r.reply <- err
	}
}

// privateMounts gives the calling thread a mount namespace of its own
// that nothing propagates into or out of.
func privateMounts() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("private mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "none", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	return nil
}

// procReuse is how many namespaces one proc mount serves before the
// writer mounts a new one: each leaves its dentries in the mount, so a
// lookup walks at most this many, and the mount's cost is shared.
const procReuse = 64

// enter joins r's network namespace, mounts a new proc over the last one
// when that one has served procReuse namespaces, and runs r's function.
func (w *ProcWriter) enter(r procReq, served *int) error {
	if w.err != nil {
		return w.err
	}
	if err := unix.Setns(r.fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter namespace %s: %w", r.name, err)
	}
	if *served == 0 || *served >= procReuse {
		if *served > 0 {
			if err := unix.Unmount("/proc", unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount the last proc: %w", err)
			}
		}
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount proc for %s: %w", r.name, err)
		}
		*served = 0
	}
	*served++
	return r.fn()
}

// Do runs fn on the writer's thread inside the network namespace fd refers
// to, with a proc of the writer's own on /proc (whose /proc/sys/net is the
// namespace's). fn must not keep anything open there: a later call may
// mount over it.
func (w *ProcWriter) Do(fd int, name string, fn func() error) error {
	reply := make(chan error, 1)
	w.reqs <- procReq{fd: fd, name: name, fn: fn, reply: reply}
	return <-reply
}

// DoIn is Do for an open namespace.
func (w *ProcWriter) DoIn(n *NS, fn func() error) error { return w.Do(n.fd, n.Name, fn) }

// Close ends the writer's thread (and with it its mount namespace).
func (w *ProcWriter) Close() {
	if w.reqs == nil {
		return
	}
	close(w.reqs)
	<-w.done
	w.reqs = nil
}

// ProcJob is one namespace's part of a DoAll: its descriptor, its name
// (for errors) and what to run there.
type ProcJob struct {
	FD   int
	Name string
	Fn   func() error
}

// DoAll is Do for each of jobs in order, in one request to the writer's
// thread; it stops at the first failure and returns how many jobs ran to
// their end, and that failure.
func (w *ProcWriter) DoAll(jobs []ProcJob) (int, error) {
	done := 0
	reply := make(chan error, 1)
	w.reqs <- procReq{fd: -1, batch: jobs, done: &done, reply: reply}
	return done, <-reply
}
