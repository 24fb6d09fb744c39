package cgroup

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits are what Set writes: CPU in percent of one CPU, Memory in bytes,
// Pids a count; zero leaves that kind unlimited.
type Limits struct {
	CPU    float64
	Memory uint64
	Pids   int
}

// period is the CPU bandwidth period nslab sets: the quota is CPU% of it.
const period = 100_000 // µs

// Set writes l to g.
//
// Equivalent to (v2): echo "QUOTA 100000" > cpu.max; echo BYTES >
// memory.max; echo 0 > memory.swap.max; echo N > pids.max. In v1:
// cpu.cfs_period_us, cpu.cfs_quota_us, memory.limit_in_bytes (and
// memory.memsw.limit_in_bytes), pids.max.
func (g *Group) Set(l Limits) error {
	var errs []error
	if l.CPU > 0 {
		quota := strconv.Itoa(int(math.Round(l.CPU / 100 * period)))
		if g.h.Version == 2 {
			errs = append(errs, g.write("cpu", "cpu.max", quota+" "+strconv.Itoa(period)))
		} else {
			errs = append(errs, g.write("cpu", "cpu.cfs_period_us", strconv.Itoa(period)), g.write("cpu", "cpu.cfs_quota_us", quota))
		}
	}
	if l.Memory > 0 {
		bytes := strconv.FormatUint(l.Memory, 10)
		// Swap would let a process past the limit instead of being
		// killed at it: none, where the kernel counts it.
		if g.h.Version == 2 {
			errs = append(errs, g.write("memory", "memory.max", bytes), g.writeIfThere("memory", "memory.swap.max", "0"))
		} else {
			errs = append(errs, g.write("memory", "memory.limit_in_bytes", bytes), g.writeIfThere("memory", "memory.memsw.limit_in_bytes", bytes))
		}
	}
	if l.Pids > 0 {
		errs = append(errs, g.write("pids", "pids.max", strconv.Itoa(l.Pids)))
	}
	return errors.Join(errs...)
}

// writeIfThere is write of a file the kernel may not have (swap
// accounting off).
func (g *Group) writeIfThere(controller, name, value string) error {
	if _, err := os.Stat(filepath.Join(g.dir(controller), name)); err != nil {
		return nil
	}
	return g.write(controller, name, value)
}

// Prepare readies cmd to start in g. In v2 it sets cmd's SysProcAttr to
// clone it into g. In v1, join moves the calling thread into g, and must
// run on the locked OS thread that then starts cmd (see ns.NS.StartIn),
// which is discarded after; join is nil in v2. Prepare opens g's files
// here, in the host's mounts: the thread that starts cmd has joined the
// node's, where /sys is the node's. done closes them once cmd started.
func (g *Group) Prepare(cmd *exec.Cmd) (join func() error, done func(), err error) {
	if g.h.Version == 2 {
		fd, err := unix.Open(g.dir(""), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("open cgroup %s: %w", g.dir(""), err)
		}
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		return nil, func() { unix.Close(fd) }, nil
	}
	var files []*os.File
	done = func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, d := range g.Dirs() {
		f, err := os.OpenFile(filepath.Join(d, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			done()
			return nil, nil, fmt.Errorf("open cgroup %s: %w", d, err)
		}
		files = append(files, f)
	}
	join = func() error {
		tid := []byte(strconv.Itoa(unix.Gettid()))
		for _, f := range files {
			if _, err := f.Write(tid); err != nil {
				return fmt.Errorf("move the starting thread into cgroup %s: %w", filepath.Dir(f.Name()), err)
			}
		}
		return nil
	}
	return join, done, nil
}

// JoinProcess moves this whole process into g: for a process about to
// replace itself with a node's program (nslab exec).
func (g *Group) JoinProcess() error {
	pid := strconv.Itoa(os.Getpid())
	for _, d := range g.Dirs() {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(pid), 0o644); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

// Remove removes the cgroups dirs, children before their parents (the
// order given is parents first, as they were made): the processes still
// in one are killed first, and a directory that is gone already counts as
// removed. nslab's own top directory goes too when no other lab uses it.
func Remove(dirs []string) error {
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		errs = append(errs, removeOne(dirs[i]))
	}
	tops := map[string]bool{}
	for _, d := range dirs {
		if i := strings.LastIndex(d, "/"+Root+"/"); i >= 0 {
			tops[d[:i+len(Root)+1]] = true
		}
	}
	for top := range tops {
		// Another lab's cgroups keep it busy: that is no failure.
		if err := unix.Rmdir(top); err != nil && err != unix.ENOENT && err != unix.EBUSY && err != unix.ENOTEMPTY {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", top, err))
		}
	}
	return errors.Join(errs...)
}

// removeBound is how long Remove waits for a cgroup's killed processes
// to leave it.
const removeBound = 5 * time.Second

// removeOne kills what is in cgroup dir and removes it.
func removeOne(dir string) error {
	deadline := time.Now().Add(removeBound)
	for {
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		b, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if rerr != nil {
			return fmt.Errorf("remove cgroup %s: %w (its processes: %w)", dir, err, rerr)
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = unix.Kill(pid, unix.SIGKILL) // gone already: fine
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
