package ns

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

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
				e.shared, _ = strconv.Atoi(v)
			}
			if v, ok := strings.CutPrefix(opt, "master:"); ok {
				e.master, _ = strconv.Atoi(v)
			}
		}
		out = append(out, e)
	}
	return out
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
)

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
