package ns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A named namespace is a bind mount, and a bind mount lives in a mount
// namespace. nslab run through `ip netns exec HOST` is in a mount namespace
// of its own, a slave of the host's: a mount made there is seen by no one
// else and goes with that mount namespace when nslab exits, taking the
// network namespace with it. So when the run directory's mount is a slave,
// namespaces are mounted and unmounted in its master's mount namespace,
// the one the directory receives from: from there they propagate back to
// this one, and outlive the process. The master is found as the mount
// namespace of an ancestor process whose mount of the directory is shared
// in the peer group this one is a slave of.

// The run directory is set up as iproute2's `ip netns add` sets it up
// (ip/ipnetns.c, netns_add) before the first namespace is mounted in it:
// bind-mounted on itself when it is not a mount point, and made a shared
// mount, recursively. On a new boot `/run/netns` does not exist and `/`
// may have private propagation; a namespace mounted under a plain
// directory there would stay in the mount namespace that mounted it, and
// one started later through `ip netns exec` (a slave copy of the host's)
// would receive nothing from, or give nothing back to, the host's.

// shareDir makes dir a shared mount, giving it a mount of its own first
// when it is not a mount point (mount(2) answers EINVAL for that). It runs
// in the mount namespace the namespaces are mounted in (mountHome).
//
// iproute2 binds the directory on itself. An empty one gets a tmpfs here
// instead (as /run is on most machines): each name is a mount point file,
// and on a disk file system (ours have /run on ext4) every new file is an
// inode, which ext4 allocates past every inode deleted in the last
// minutes, so a deploy paid for the destroys before it. A directory that
// holds anything keeps iproute2's bind, which hides nothing.
//
// Equivalent to: mount --make-rshared DIR || { [ -z "$(ls -A DIR)" ] && mount -t tmpfs -o mode=0755,nosuid,nodev,noexec nslab-netns DIR || mount --rbind DIR DIR; mount --make-rshared DIR; }
func shareDir(dir string) error {
	for bound := false; ; bound = true {
		err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("make %s a shared mount: %w", dir, err)
		}
		if err := mountOwn(dir); err != nil {
			return err
		}
	}
}

// mountOwn gives dir a mount of its own: a tmpfs when it is empty, else a
// bind of itself (see shareDir).
func mountOwn(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	if len(ents) == 0 {
		if err := unix.Mount("nslab-netns", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
		}
		return nil
	}
	if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mount %s on itself: %w", dir, err)
	}
	return nil
}

// CheckDir reports whether namespaces mounted under dir from this process
// outlive it, without changing anything: nil when they are mounted in a
// mount namespace that another process holds (the machine's, a parent's,
// or the master of a slave copy of dir, as under `ip netns exec`), or one
// whose mount of dir is a peer of an ancestor's. Otherwise the error names
// the cause and the remedy. Deploy calls it before it creates anything.
func CheckDir(dir string) error {
	fd, err := mountHome(dir)
	if err != nil || fd >= 0 {
		return err // no master found; or mounts go to the master's mount namespace
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	ok, err := heldByAncestor(abs)
	if err != nil || ok {
		return err
	}
	return fmt.Errorf("namespaces mounted under %s would vanish when nslab exits: nslab runs in a mount namespace of its own that no parent process shares (as under `unshare -m`, or `ip netns exec` started before %s was a shared mount), and %s there propagates to no other mount namespace; run nslab in the host's mount namespace (to run it in another network namespace: nsenter --net=/run/netns/NAME nslab ...), or let nslab (or `ip netns add`) make %s a shared mount in the host's mount namespace first, then start the other one: %w", abs, abs, abs, abs, ErrNotDurable)
}

// ErrNotDurable marks a run directory whose mounts would not outlive this
// process (see CheckDir).
var ErrNotDurable = errors.New("namespaces would not outlive nslab")

// heldByAncestor reports whether an ancestor process (pid 1 included) is
// in this process's mount namespace, or has a mount of dir's mount point
// in the peer group of this process's.
func heldByAncestor(dir string) (bool, error) {
	if os.Getpid() == 1 {
		return true, nil
	}
	self, err := mountNamespaceOf("self")
	if err != nil {
		return false, err
	}
	text, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("read this process's mounts: %w", err)
	}
	m, _ := mountOf(parseMountinfo(string(text)), dir)
	// PID 1 is every process's ancestor, even where the parent is outside
	// this PID namespace (getppid is 0 there: under nsenter -p).
	if ino, err := mountNamespaceOf("1"); err == nil && ino == self {
		return true, nil
	}
	for pid := os.Getppid(); pid >= 1; pid = parentOf(pid) {
		if ino, err := mountNamespaceOf(strconv.Itoa(pid)); err == nil && ino == self {
			return true, nil
		}
		if m.shared != 0 {
			if text, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid)); err == nil {
				if pm, ok := mountOf(parseMountinfo(string(text)), dir); ok && pm.point == m.point && pm.shared == m.shared {
					return true, nil
				}
			}
		}
		if pid == 1 {
			break
		}
	}
	return false, nil
}

// mountNamespaceOf is the inode of /proc/PROC/ns/mnt.
func mountNamespaceOf(proc string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+proc+"/ns/mnt", &st); err != nil {
		return 0, fmt.Errorf("stat the mount namespace of %s: %w", proc, err)
	}
	return st.Ino, nil
}

// mountEntry is the part of a /proc/PID/mountinfo line nslab reads.
type mountEntry struct {
	point          string
	shared, master int // peer group ids; 0: none
}

// parseMountinfo reads mountinfo text.
func parseMountinfo(text string) []mountEntry {
	var out []mountEntry
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 7 {
			continue
		}
		e := mountEntry{point: unescape(f[4])}
		for _, opt := range f[6:] {
			if opt == "-" {
				break
			}
			if v, ok := strings.CutPrefix(opt, "shared:"); ok {
				e.shared = peerGroup(v)
			}
			if v, ok := strings.CutPrefix(opt, "master:"); ok {
				e.master = peerGroup(v)
			}
		}
		out = append(out, e)
	}
	return out
}

// peerGroup reads a peer group id (a positive number); 0 for anything else.
func peerGroup(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountOf is the entry of the mount that holds dir: the last (topmost) one
// whose mount point is dir or its nearest parent.
func mountOf(entries []mountEntry, dir string) (mountEntry, bool) {
	best, found := mountEntry{}, false
	for _, e := range entries {
		if (dir == e.point || strings.HasPrefix(dir, strings.TrimSuffix(e.point, "/")+"/")) && (!found || len(e.point) >= len(best.point)) {
			best, found = e, true
		}
	}
	return best, found
}

var (
	homeMu sync.Mutex
	homes  = map[string]int{} // run directory -> fd of the mount namespace to mount in; -1: this one
	// outside is an fd of the mount namespace outside this process's
	// container (see MountOutsideContainer); -1: none.
	outside = -1
)

// MountOutsideContainer has this process make the mounts that must
// outlive it (a lab's views) in the mount namespace of its nearest
// ancestor in another mount namespace (a container runtime's shim, in
// the node's), where a directory of the run directories is a mount of
// this container's own that propagates nowhere (a hostPath volume
// without propagation). A new container on the node, after this one
// is gone, finds them there. Directories whose mounts here reach the
// node (a bidirectional volume, such as /run/netns) are mounted here, as
// before.
//
// It fails when no ancestor is in another mount namespace.
func MountOutsideContainer() error {
	self, err := nsInode("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	// The parent may be gone while it is read: a process started by
	// runc exec (kubectl exec) has runc as its parent until runc exits
	// and the shim, a subreaper, takes it over. The walk is tried again
	// then, for a second at most.
	for try := 0; try < 100; try++ {
		fd, err := outsideAncestor(self)
		if err != nil {
			return err
		}
		if fd >= 0 {
			homeMu.Lock()
			defer homeMu.Unlock()
			if outside >= 0 {
				unix.Close(outside)
			}
			outside = fd
			clear(homes)
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("no ancestor of this process is in another mount namespace: nslab is not in a container")
}

// outsideAncestor opens the mount namespace of the nearest ancestor whose
// mount namespace is not self; -1 when none is found, or a process of
// the walk went meanwhile.
func outsideAncestor(self uint64) (int, error) {
	for pid := os.Getppid(); pid > 1; pid = parentOf(pid) {
		p := fmt.Sprintf("/proc/%d/ns/mnt", pid)
		ino, err := nsInode(p)
		if err != nil {
			return -1, nil
		}
		if ino == self {
			continue
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return -1, nil
		}
		if err != nil {
			return -1, fmt.Errorf("open the mount namespace of process %d, outside this container: %w", pid, err)
		}
		return fd, nil
	}
	return -1, nil
}

// DetachHere unmounts dir, with every mount under it, in this process's
// mount namespace only (where it is a mount point; elsewhere nothing).
//
// Equivalent to: umount -l DIR
func DetachHere(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s in this mount namespace: %w", dir, err)
	}
	return nil
}

// nsInode is the inode of namespace file p.
func nsInode(p string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", p, err)
	}
	return st.Ino, nil
}

// mountHome returns an open fd of the mount namespace where the named
// namespaces of dir must be mounted, or -1 when it is this process's own.
// It fails when this process's mounts of dir would reach no one and no
// master can be found.
func mountHome(dir string) (int, error) {
	homeMu.Lock()
	defer homeMu.Unlock()
	if fd, ok := homes[dir]; ok {
		return fd, nil
	}
	fd, err := findMountHome(dir)
	if err == nil {
		homes[dir] = fd
	}
	return fd, err
}

func findMountHome(dir string) (int, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return -1, err
	}
	self, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return -1, fmt.Errorf("read this process's mounts: %w", err)
	}
	m, ok := mountOf(parseMountinfo(string(self)), abs)
	if outside >= 0 && (!ok || m.shared == 0 && m.master == 0) {
		return outside, nil // mounts here would reach no one outside the container
	}
	if !ok || m.master == 0 {
		return -1, nil // mounts here are this mount namespace's own, or propagate to its peers
	}
	for pid := os.Getppid(); pid > 1; pid = parentOf(pid) {
		text, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		if err != nil {
			break
		}
		if pm, ok := mountOf(parseMountinfo(string(text)), abs); ok && pm.point == m.point && pm.shared == m.master {
			fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return -1, fmt.Errorf("open the mount namespace of process %d, where %s is shared: %w", pid, m.point, err)
			}
			return fd, nil
		}
	}
	return -1, fmt.Errorf("%s is a slave mount here (nslab runs in a mount namespace of its own, as under `ip netns exec`), and no parent process has its master: namespaces mounted here would vanish when nslab exits; run nslab in the host's mount namespace (to run it in another network namespace: nsenter --net=/run/netns/NAME nslab ...)", m.point)
}

// parentOf returns the parent pid of pid, 0 when unknown.
func parentOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces and parentheses
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// enterMountHome moves the calling locked thread into mount namespace fd
// (from mountHome; -1 leaves it where it is). The thread then has a file
// system context of its own and must never be unlocked: its goroutine
// exits locked, so the runtime discards it.
func enterMountHome(fd int) error {
	if fd < 0 {
		return nil
	}
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the file system context: %w", err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter the mount namespace of the run directory's master: %w", err)
	}
	return nil
}

// inMountHome runs fn on a thread in dir's mount home (see mountHome):
// on this thread when that is this process's mount namespace, else on a
// throwaway thread.
func inMountHome(dir string, fn func() error) error {
	fd, err := mountHome(dir)
	if err != nil {
		return err
	}
	if fd < 0 {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := enterMountHome(fd); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// ReleaseDir undoes what creating the first namespace did to a run
// directory of the caller's own (a test's temporary directory): it
// detaches the directory's bind mount of itself, so the directory can be
// removed. A directory that is not a mount point is left as it is.
// /run/netns is left shared, as iproute2 leaves it.
//
// Equivalent to: umount -l DIR
func ReleaseDir(dir string) error {
	return inMountHome(dir, func() error {
		err := unix.Unmount(dir, unix.MNT_DETACH)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
		return nil
	})
}
