package rootless

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// envHolder is set, to the user's Dir, for the holder process.
const envHolder = "NSLAB_ROOTLESS_HOLDER"

// Ready is the line the holder writes on its standard output once its
// namespaces are set up; the command that started it waits for it.
const Ready = "ready"

// holderFile records the running holder: its pid and its user namespace,
// "PID user:[INODE]", so a pid reused by another process is not taken
// for it.
func holderFile(dir string) string { return filepath.Join(dir, "holder") }

// Holding reports whether this process was started as a user's holder,
// by its environment (lookup) and its pid (nslab's main asks first, with
// os.LookupEnv, and then runs Hold and nothing else).
func Holding(lookup func(string) (string, bool)) bool {
	v, ok := lookup(envHolder)
	return ok && v != "" && os.Getpid() == 1
}

// HolderDir is the holder's state directory its starter gave it.
func HolderDir(lookup func(string) (string, bool)) string {
	v, _ := lookup(envHolder)
	return v
}

// Hold is the holder's life: it sets its namespaces up, calls ready (which
// writes Ready for the command waiting on it), and then waits, reaping the
// processes the labs leave to it, until it is told to end; its namespaces
// end with it. warn hears what is missing but not needed. It runs as PID 1
// of the holder's PID namespace, in its new user, mount and network
// namespaces.
func Hold(dir string, ready func(), warn func(error)) error {
	if err := setUp(dir, warn); err != nil {
		return err
	}
	ready()
	hold()
	return nil
}

// setUp gives the holder's mount namespace what nslab's commands need:
// a proc of the new PID namespace (node setup mounts one per thread, which
// a user namespace may only do for a PID namespace it owns), a tmpfs on
// /run, the user's state directory on /run/nslab, and a sysfs of the
// holder's network namespace. It runs in the holder's namespaces.
func setUp(dir string, warn func(error)) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	const locked = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := unix.Mount("proc", "/proc", "proc", locked, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	st := stateDir(dir)
	// The labs of an earlier holder ended with it: their state goes too.
	if err := os.RemoveAll(st); err != nil {
		return fmt.Errorf("clear %s: %w", st, err)
	}
	if err := os.Mkdir(st, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	fd, err := unix.Open(st, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", st, err)
	}
	defer unix.Close(fd)
	if err := unix.Mount("nslab-rootless", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount a tmpfs on /run: %w", err)
	}
	if err := os.Mkdir("/run/nslab", 0o755); err != nil {
		return fmt.Errorf("mkdir /run/nslab: %w", err)
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), "/run/nslab", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s on /run/nslab: %w", st, err)
	}
	// The host's sysfs shows the host's interfaces; this one the holder's
	// (none but lo). Without it nothing fails that a lab needs.
	if err := unix.Mount("sysfs", "/sys", "sysfs", locked, ""); err != nil {
		warn(fmt.Errorf("sysfs of the holder's network namespace: %w", err))
	}
	return nil
}

// hold waits, as PID 1, reaping the processes the labs leave to it, until
// it is told to end (SIGTERM, SIGINT or SIGHUP).
func hold() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	for s := range sigs {
		if s != unix.SIGCHLD {
			return
		}
		for {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// start starts the user's holder and records it under dir. Its creator
// is this process's thread; the holder runs on in a session of its own.
func start(dir, self string) error {
	logPath := filepath.Join(dir, "holder.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("holder log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envHolder+"="+dir)
	cmd.Stderr = logf
	cmd.Dir = "/"
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWPID,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		// An unprivileged user may map its gid only with setgroups denied.
		GidMappingsEnableSetgroups: false,
		Setsid:                     true,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: a user namespace cannot be made (user.max_user_namespaces 0, or a sandbox): %w", ErrUnavailable, err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != Ready {
		abandon(cmd)
		why, _ := os.ReadFile(logPath)
		return fmt.Errorf("%w: the holder did not start: %s", ErrUnavailable, strings.TrimSpace(string(why)))
	}
	pid := cmd.Process.Pid
	userns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err == nil {
		err = os.WriteFile(holderFile(dir), []byte(fmt.Sprintf("%d %s\n", pid, userns)), 0o600)
	}
	if err != nil {
		abandon(cmd)
		return fmt.Errorf("record the rootless holder: %w", err)
	}
	// The holder outlives this command; it is never waited for here.
	_ = cmd.Process.Release()
	return nil
}

// abandon ends a holder that did not start (its error is what the caller
// reports, not the kill's).
func abandon(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// running is the pid of the user's recorded holder, or 0 when there is
// none or its process has ended.
func running(dir string) int {
	data, err := os.ReadFile(holderFile(dir))
	if err != nil {
		return 0
	}
	pidText, userns, ok := strings.Cut(strings.TrimSpace(string(data)), " ")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return 0
	}
	now, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err != nil || now != userns {
		return 0
	}
	return pid
}

// stop ends the holder pid (and with it every lab namespace and process)
// and forgets it.
func stop(dir string, pid int) error {
	if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("stop the rootless holder %d: %w", pid, err)
	}
	if err := os.Remove(holderFile(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stop the rootless holder: %w", err)
	}
	return nil
}
