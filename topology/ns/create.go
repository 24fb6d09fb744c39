package ns

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Creator makes named namespaces from one dedicated locked OS thread: for each
// namespace the thread unshares a new network namespace, runs the caller's
// setup inside it, and bind-mounts it under Dir. The caller's own thread never
// changes namespace. Close ends the thread (it is discarded, never reused).
//
// One thread for many namespaces keeps creation cheap (no thread start per
// namespace), which matters for labs of hundreds of nodes.
type Creator struct {
	Dir  string
	reqs chan createReq
	done chan struct{}
}

type createReq struct {
	name  string
	setup func() error
	reply chan createReply
	// batch: a CreateAll, answered on batchReply instead.
	batch      []createItem
	batchReply chan batchReply
}

// createItem is one namespace of a CreateAll.
type createItem struct {
	name  string
	setup func() error
}

// batchReply is what a CreateAll made, and the failure that stopped it.
type batchReply struct {
	made []*NS
	err  error
}

type createReply struct {
	ns  *NS
	err error
}

// NewCreator starts the creator thread. Dir is created (0755) if missing.
func NewCreator(dir string) (*Creator, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create namespace directory %s: %w", dir, err)
	}
	c := &Creator{Dir: dir, reqs: make(chan createReq), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

// Close stops the creator thread. Namespaces it made stay.
func (c *Creator) Close() {
	if c.reqs == nil {
		return
	}
	close(c.reqs)
	<-c.done
	c.reqs = nil
}

func (c *Creator) loop() {
	runtime.LockOSThread()
	defer close(c.done)
	home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		for r := range c.reqs {
			r.reply <- createReply{nil, fmt.Errorf("open this thread's namespace: %w", err)}
		}
		return // locked: the thread dies
	}
	// Mounts are made where they outlive this process (see mountHome);
	// a thread moved there is never reused.
	mnt, err := mountHome(c.Dir)
	if err == nil {
		err = enterMountHome(mnt)
	}
	if err == nil {
		err = shareDir(c.Dir)
	}
	if err != nil {
		unix.Close(home)
		for r := range c.reqs {
			r.reply <- createReply{nil, fmt.Errorf("create namespaces under %s: %w", c.Dir, err)}
		}
		return // locked: the thread dies
	}
	if mnt >= 0 {
		defer unix.Close(home) // and exit locked: the thread dies
	} else {
		// The thread ends up in the last namespace created: go home, or die.
		defer goHome(home)
	}
	for r := range c.reqs {
		if r.batchReply != nil {
			var b batchReply
			for _, it := range r.batch {
				n, err := c.createHere(it.name, it.setup)
				if err != nil {
					b.err = err
					break
				}
				b.made = append(b.made, n)
			}
			r.batchReply <- b
			continue
		}
		n, err := c.createHere(r.name, r.setup)
		r.reply <- createReply{n, err}
	}
}

// Create makes the named network namespace dir/name. setup, if not nil, runs
// on the creator thread inside the new namespace before it becomes visible
// under Dir, so a namespace that can be seen by name has always been set up
// (nslab puts its ownership marker there). It returns ErrExists, changing
// nothing, when the name is already taken.
//
// Equivalent to: ip netns add NAME
func (c *Creator) Create(name string, setup func() error) (*NS, error) {
	reply := make(chan createReply, 1)
	c.reqs <- createReq{name: name, setup: setup, reply: reply}
	r := <-reply
	return r.ns, r.err
}

// createHere runs on the locked creator thread.
func (c *Creator) createHere(name string, setup func() error) (*NS, error) {
	p, err := pathOf(c.Dir, name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(p); err == nil {
		return nil, fmt.Errorf("create namespace %s: %w", name, ErrExists)
	}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("create namespace %s: unshare: %w", name, err)
	}
	if setup != nil {
		if err := setup(); err != nil {
			return nil, fmt.Errorf("set up namespace %s: %w", name, err)
		}
	}
	// O_EXCL: whoever creates the mount point first owns the name.
	f, err := unix.Open(p, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o444)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("create namespace %s: %w", name, ErrExists)
		}
		return nil, fmt.Errorf("create namespace %s: mount point: %w", name, err)
	}
	unix.Close(f)
	if err := unix.Mount("/proc/thread-self/ns/net", p, "none", unix.MS_BIND, ""); err != nil {
		_ = unix.Unlink(p) // best effort: the mount failed, and that error is the one to report
		return nil, fmt.Errorf("create namespace %s: bind mount: %w", name, err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open namespace %s: %w", name, err)
	}
	return &NS{Name: name, Path: p, fd: fd}, nil
}

// CreateAll is Create for each of names in order, setups[i] run in the
// i-th, in one request to the creator's thread (a request per namespace
// costs two thread switches, a fifth of a deploy's time at 1,000 nodes).
// It stops at the first failure: it returns the namespaces it made (the
// first len(made) of names) and that failure.
func (c *Creator) CreateAll(names []string, setups []func() error) ([]*NS, error) {
	items := make([]createItem, len(names))
	for i, n := range names {
		items[i] = createItem{name: n, setup: setups[i]}
	}
	reply := make(chan batchReply, 1)
	c.reqs <- createReq{batch: items, batchReply: reply}
	r := <-reply
	return r.made, r.err
}
