package ns

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Worker is one locked OS thread that has joined a namespace and runs
// functions there on request, for work that follows the thread (procfs under
// /proc/thread-self, sysctls) and is done many times: it saves a thread
// start per call over Do. Close ends it; the thread goes back to its own
// namespace before it is released, or is discarded.
type Worker struct {
	name string
	reqs chan workReq
	done chan struct{}
}

type workReq struct {
	fn    func() error
	reply chan error
}

// Worker starts a worker thread inside n.
func (n *NS) Worker() (*Worker, error) {
	w := &Worker{name: n.Name, reqs: make(chan workReq), done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer close(w.done)
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			started <- fmt.Errorf("open this thread's namespace: %w", err)
			return // locked: the thread dies
		}
		defer goHome(home)
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			started <- fmt.Errorf("enter namespace %s: %w", n.Name, err)
			return
		}
		started <- nil
		for r := range w.reqs {
			r.reply <- r.fn()
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return w, nil
}

// Do runs fn on the worker's thread, inside the namespace, and returns its
// error. Calls are served one at a time.
func (w *Worker) Do(fn func() error) error {
	reply := make(chan error, 1)
	w.reqs <- workReq{fn, reply}
	return <-reply
}

// Close ends the worker thread.
func (w *Worker) Close() {
	if w.reqs != nil {
		close(w.reqs)
		<-w.done
		w.reqs = nil
	}
}
