package deployed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// ServiceEnv names the environment variable that marks a lab's services
// (LAB/NODE/...): how a process is known as the lab's.
const ServiceEnv = "NSLAB_SERVICE"

// ProcessStart reads a process's start time (field 22 of /proc/PID/stat,
// clock ticks since boot).
func ProcessStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 is the 20th after the name
}

// Alive reports whether pid is still the process that started at start
// (and not a zombie).
func Alive(pid int, start uint64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(b, ')'); i < 0 || i+2 >= len(b) || b[i+2] == 'Z' {
		return false
	}
	got, err := ProcessStart(pid)
	return err == nil && got == start
}

// BIRDCtl is BIRD's control socket in a node.
const BIRDCtl = "/run/bird/bird.ctl"

// FRRDaemons are the daemons of f in start order: zebra, staticd, then
// the file's.
func FRRDaemons(f *spec.FRR) []string {
	return append([]string{"zebra", "staticd"}, f.Daemons...)
}

// RunIn runs argv in namespace x and view v (nil: none) to its end, its
// environment carrying the lab's service mark tag when tag is not "", and
// returns its combined output. It is killed when ctx ends.
//
// Equivalent to: nsenter --net=NETNS --mount=VIEW.mnt --uts=VIEW.uts ARGV...
func RunIn(ctx context.Context, x *ns.NS, v *ns.View, tag string, argv ...string) ([]byte, error) {
	cmd, buf := Command(tag, argv)
	if err := x.StartIn(v, cmd); err != nil {
		return nil, err
	}
	return Wait(ctx, cmd, buf, argv[0])
}

// Command is the process of argv, its output in the buffer returned,
// its environment carrying the service mark tag when tag is not "".
func Command(tag string, argv []string) (*exec.Cmd, *bytes.Buffer) {
	var buf bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.Env = os.Environ()
	cmd.WaitDelay = time.Second // a daemon that forks may keep the output open
	if tag != "" {
		cmd.Env = append(cmd.Env, ServiceEnv+"="+tag)
	}
	return cmd, &buf
}

// Wait waits for cmd, started, killing it when ctx ends, and returns
// its output.
func Wait(ctx context.Context, cmd *exec.Cmd, buf *bytes.Buffer, name string) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	defer stop()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%s exited with %d", filepath.Base(name), exit.ExitCode())
	}
	return buf.Bytes(), err
}

// Marked lists the processes, this one aside, whose service mark (the
// value of ServiceEnv in their environment) match accepts. An unreadable
// /proc, or a process gone meanwhile, is nothing found.
func Marked(match func(mark string) bool) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	key := []byte(ServiceEnv + "=")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if mark, ok := bytes.CutPrefix(kv, key); ok {
				if match(string(mark)) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}
