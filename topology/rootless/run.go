package rootless

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Run runs the nslab command args (args[0] is ignored: this executable
// runs again) inside the user's holder, starting one when there is none,
// and stops the holder when the command leaves no lab. It returns the
// command's exit code. It runs in the caller's (the host's) namespaces.
//
// A command that serves the host (hostNet: nslab web, metrics) stays in
// the host's network namespace, so its port is the host's; it enters the
// labs' nodes as any command does (the holder's user namespace owns them).
//
// Commands hold the user's holder lock shared while they run; a holder is
// started, and stopped, only under it held alone, so a command never
// finds its holder stopped under it by another's end.
func Run(args []string, hostNet bool, stdio [3]*os.File) (int, error) {
	dir, err := Dir()
	if err != nil {
		return 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find nslab's executable: %w", err)
	}
	lock, err := unix.Open(filepath.Join(dir, "holder.lock"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("rootless holder lock: %w", err)
	}
	defer unix.Close(lock)
	pid, err := holderLocked(lock, dir, self)
	if err != nil {
		return 0, err
	}
	code, err := enter(pid, self, args[1:], hostNet, stdio)
	if err != nil {
		return 0, err
	}
	return code, stopIdle(lock, dir, pid)
}

// holderLocked returns the running holder's pid, starting one if there is
// none, with lock held shared.
func holderLocked(lock int, dir, self string) (int, error) {
	for {
		if err := unix.Flock(lock, unix.LOCK_SH); err != nil {
			return 0, fmt.Errorf("rootless holder lock: %w", err)
		}
		if pid := running(dir); pid > 0 {
			return pid, nil
		}
		if err := unix.Flock(lock, unix.LOCK_EX); err != nil {
			return 0, fmt.Errorf("rootless holder lock: %w", err)
		}
		if running(dir) == 0 {
			if err := start(dir, self); err != nil {
				_ = unix.Flock(lock, unix.LOCK_UN) // closing it unlocks it too
				return 0, err
			}
		}
		// Taken shared again from the top: the holder is checked once more.
		if err := unix.Flock(lock, unix.LOCK_UN); err != nil {
			return 0, fmt.Errorf("rootless holder lock: %w", err)
		}
	}
}

// enter runs self with args in the holder pid's user, mount, network
// (unless hostNet) and PID namespaces, in this directory, and returns its
// exit code. It has this process's standard input, output and error
// (stdio, a terminal as it is).
//
// Equivalent to: nsenter --preserve-credentials -U -m -n -p -t PID --wd=$PWD -- nslab ARGS
//
// nsenter -p runs the command as its child and waits for it; it is
// started with SIGINT ignored, so that a Ctrl-C, which reaches the
// command too (nslab inside catches SIGINT again and cleans up), does not
// end the wait before the command has. Signals sent to this process go to
// the command.
func enter(pid int, self string, args []string, hostNet bool, stdio [3]*os.File) (int, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, fmt.Errorf("working directory: %w", err)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return 0, fmt.Errorf("rootless labs need nsenter (Debian's util-linux): %w", err)
	}
	opts := []string{"--preserve-credentials", "-U", "-m", "-n", "-p"}
	if hostNet {
		opts = slices.DeleteFunc(opts, func(o string) bool { return o == "-n" })
	}
	cmd := exec.Command(nsenter, append(append(opts, "-t", strconv.Itoa(pid), "--wd="+wd, "--", self), args...)...)
	cmd.Env = append(os.Environ(), envInside+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	signal.Ignore(unix.SIGINT)
	err = cmd.Start()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(sigs)
	if err != nil {
		return 0, fmt.Errorf("enter the rootless lab namespaces: %w", err)
	}
	go forward(sigs, cmd.Process.Pid)
	return exitCode(cmd.Wait())
}

// forward sends the signals that come to this process to the command
// nsenter (pid) runs, or to nsenter while it has none.
func forward(sigs <-chan os.Signal, pid int) {
	for s := range sigs {
		to := pid
		if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
			if f := strings.Fields(string(kids)); len(f) == 1 {
				to, _ = strconv.Atoi(f[0])
			}
		}
		_ = unix.Kill(to, s.(unix.Signal)) // it may have ended: its exit says how
	}
}

// exitCode is the exit code of the entered command, from nsenter's wait.
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(unix.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, fmt.Errorf("enter the rootless lab namespaces: %w", err)
}

// stopIdle stops the holder pid when no lab is left and no other command
// holds the lock (lock is held shared on entry).
func stopIdle(lock int, dir string, pid int) error {
	if err := unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil // another command is running in the holder
	}
	left, err := labs(dir)
	if err != nil || len(left) > 0 {
		return err
	}
	return stop(dir, pid)
}
