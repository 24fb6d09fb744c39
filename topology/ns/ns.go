// Package ns is nslab's one namespace primitive: it creates, opens, enters and
// removes named network namespaces. It is the only package that calls setns
// or unshare; everything else asks it. (Other packages lock OS threads for
// their own reasons: the traffic engines pin sending threads to CPUs.)
//
// Rules it keeps:
//   - Creating a namespace never moves the caller's thread: creation happens on a
//     dedicated locked thread that is thrown away afterwards.
//   - A thread that has joined a foreign namespace goes back to its own
//     before it is unlocked; if it cannot, the goroutine exits still locked,
//     so the runtime kills the thread instead of reusing it. (Going back
//     matters on the main thread, which Go wedges rather than kills.)
//   - Named namespaces are bind mounts of an nsfs inode under a run directory
//     (/run/netns by default, so `ip netns list` shows them). The directory is
//     a field so that tests can use a private one.
package ns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DefaultDir is where iproute2 keeps named network namespaces.
const DefaultDir = "/run/netns"

// ErrExists is returned by Create when the name is taken.
var ErrExists = errors.New("namespace already exists")

// NS is an open network namespace: a file descriptor on its nsfs inode.
// The caller owns it and closes it with Close.
type NS struct {
	Name string // name under the run directory; empty for unnamed namespaces
	Path string // bind-mount path, empty for unnamed namespaces
	fd   int
}

// Fd returns the namespace file descriptor (valid until Close).
func (n *NS) Fd() int { return n.fd }

// Close releases the descriptor. It does not delete the namespace.
func (n *NS) Close() error {
	if n == nil || n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	return err
}

// Inode returns the nsfs inode number that identifies the namespace.
func (n *NS) Inode() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(n.fd, &st); err != nil {
		return 0, fmt.Errorf("stat namespace %s: %w", n.Name, err)
	}
	return st.Ino, nil
}

// Open opens the named namespace dir/name. It returns an error wrapping
// os.ErrNotExist when there is no such file, and an error when the file is not
// a namespace mount.
func Open(dir, name string) (*NS, error) {
	p, err := pathOf(dir, name)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("open namespace %s: %w", name, os.ErrNotExist)
		}
		return nil, fmt.Errorf("open namespace %s: %w", name, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("statfs namespace %s: %w", name, err)
	}
	if sfs.Type != unix.NSFS_MAGIC {
		unix.Close(fd)
		return nil, fmt.Errorf("open namespace %s: %s is not a namespace mount: %w", name, p, ErrNotNamespace)
	}
	return &NS{Name: name, Path: p, fd: fd}, nil
}

// ErrNotNamespace marks a path under the run directory that exists but is not
// a mounted namespace (for instance the empty file left when a creator was
// killed between creating the mount point and mounting on it).
var ErrNotNamespace = errors.New("not a namespace mount")

// Exists reports whether dir/name exists at all (mounted or not).
func Exists(dir, name string) (bool, error) {
	p, err := pathOf(dir, name)
	if err != nil {
		return false, err
	}
	_, err = os.Lstat(p)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", p, err)
}

// List returns the names under dir (the `ip netns list` view).
func List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list namespaces in %s: %w", dir, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// Remove deletes the named namespace: it detaches the bind mount and unlinks
// the mount point. The kernel frees the namespace, and every virtual device in
// it, once nothing else holds it. A missing name is success, so Remove can be
// re-run. It does not check ownership: callers do.
//
// It unmounts where the mount was made (see mountHome).
//
// Equivalent to: ip netns delete NAME
func Remove(dir, name string) error {
	return inMountHome(dir, func() error { return remove(dir, name) })
}

func remove(dir, name string) error {
	p, err := pathOf(dir, name)
	if err != nil {
		return err
	}
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount namespace %s: %w", name, err)
	}
	if err := unix.Unlink(p); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove namespace %s: %w", name, err)
	}
	return nil
}

// pathOf joins dir and name after making sure the name cannot leave dir.
func pathOf(dir, name string) (string, error) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return "", fmt.Errorf("invalid namespace name %q: must be a single path element", name)
	}
	return filepath.Join(dir, name), nil
}

// Do runs fn on a fresh OS thread that has joined n. Afterwards the thread
// goes back to the namespace it came from and is released; if it cannot,
// it is discarded (the goroutine exits locked). Either way no other code
// ever runs in the wrong namespace. Use it for what follows the thread:
// procfs under /proc/sys and /proc/thread-self, ioctls, sockets that must
// be opened there.
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open this thread's namespace: %w", err)
			return // locked: the thread dies
		}
		defer goHome(home)
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter namespace %s: %w", n.Name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// goHome returns the locked calling thread to namespace fd home and
// unlocks it; if it cannot, the thread stays locked and dies with its
// goroutine. Going home matters when the goroutine happens to run on the
// main thread, which Go never terminates: left in a lab namespace it
// would keep that namespace alive, and /proc/self would show it.
func goHome(home int) {
	err := unix.Setns(home, unix.CLONE_NEWNET)
	unix.Close(home)
	if err == nil {
		runtime.UnlockOSThread()
	}
}

// NetlinkHandle opens an rtnetlink socket inside n. The handle then works from
// any goroutine and always acts in n; the caller closes it.
func (n *NS) NetlinkHandle() (*netlink.Handle, error) {
	var h *netlink.Handle
	err := n.Do(func() error {
		var err error
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netlink socket in namespace %s: %w", n.Name, err)
	}
	return h, nil
}
