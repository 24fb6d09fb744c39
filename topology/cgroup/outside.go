package cgroup

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Outside is a cgroup named Name at the root of every hierarchy the
// process sees whole: a place for programs that must outlive the cgroup
// this process runs in. A Kubernetes agent's pod is killed by its cgroup
// (runc signals every process in the container's cgroup when the pod
// goes); the lab verbs it starts there, and the daemons they start, would
// go with it. Started in Outside, they stay, as a node's services started
// by hand do.
type Outside struct {
	Name string
	v1   []string // the directory in each v1 hierarchy
	v2   string   // the directory in the unified hierarchy, if any
}

// FindOutside makes (or finds) the cgroup name at the root of each
// hierarchy this process's mount namespace shows from its root (a cgroup
// mount whose root is "/": the host's own cgroup file systems, mounted
// into a container from the host). It fails, saying so, when a hierarchy
// is shown only from below its root (a container's own view of its
// cgroup): a program put there could not leave the container's cgroup.
func FindOutside(name string) (*Outside, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	return outsideIn(data, name, true)
}

// outsideIn is FindOutside over mountinfo's text; make says whether to
// make the directories.
func outsideIn(mountinfo []byte, name string, make bool) (*Outside, error) {
	o := &Outside{Name: name}
	// The last mount of a hierarchy is the one its path shows: a
	// container's runtime mounts its own view first, and the host's
	// hierarchies mounted over it come after, at the same paths.
	type mount struct{ root, point, fstype string }
	byOpts := map[string]mount{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		key := g[0] + " " + superOpts(g[2])
		if _, seen := byOpts[key]; !seen {
			order = append(order, key)
		}
		byOpts[key] = mount{root: unescape(f[3]), point: unescape(f[4]), fstype: g[0]}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no cgroup file system is mounted here")
	}
	for _, key := range order {
		m := byOpts[key]
		if m.root != "/" {
			return nil, fmt.Errorf("the cgroup hierarchy at %s is shown from %s, not its root (a container's own view): mount the host's /sys/fs/cgroup over it", m.point, m.root)
		}
		dir := filepath.Join(m.point, name)
		if m.fstype == "cgroup2" {
			o.v2 = dir
		} else {
			o.v1 = append(o.v1, dir)
		}
	}
	if !make {
		return o, nil
	}
	for _, d := range append(o.v1, o.v2) {
		if d == "" {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("make cgroup %s: %w", d, err)
		}
		if strings.Contains(d, "/cpuset") {
			// A v1 cpuset cgroup takes no task until its cpus and
			// mems are set: those of its parent, the root.
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if v, err := os.ReadFile(filepath.Join(filepath.Dir(d), f)); err == nil {
					_ = os.WriteFile(filepath.Join(d, f), v, 0o644)
				}
			}
		}
	}
	return o, nil
}

// superOpts is a v1 mount's controllers (its super options less rw/ro),
// which name its hierarchy.
func superOpts(opts string) string {
	var out []string
	for _, o := range strings.Split(opts, ",") {
		if o != "rw" && o != "ro" {
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}

// Start starts cmd in o: cloned into the unified hierarchy's cgroup (v2:
// CLONE_INTO_CGROUP), and forked from a thread moved first into each v1
// hierarchy's (a locked thread, discarded after), so that cmd is never
// in the caller's cgroup, not even for the moment after its start.
func (o *Outside) Start(cmd *exec.Cmd) error {
	if o.v2 != "" {
		fd, err := unix.Open(o.v2, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open cgroup %s: %w", o.v2, err)
		}
		defer unix.Close(fd)
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		tid := []byte(strconv.Itoa(unix.Gettid()))
		for _, d := range o.v1 {
			if err := os.WriteFile(filepath.Join(d, "tasks"), tid, 0o644); err != nil {
				errc <- fmt.Errorf("move the starting thread into cgroup %s: %w", d, err)
				return
			}
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
