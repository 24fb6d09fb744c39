package ns

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// Start starts cmd inside n the way Exec runs a command (n's network
// namespace, a private mount namespace with n's own sysfs on /sys and
// /etc/netns/NAME bound over /etc), without replacing this process: the
// child is forked from a thread that has joined them, and that thread is
// discarded afterwards. Wait for cmd from any goroutine.
//
// Equivalent to: ip netns exec NAME CMD... &
func (n *NS) Start(cmd *exec.Cmd) error { return n.StartIn(nil, cmd) }

// StartIn is Start in node view v (see View): the node's own mounts and
// hostname instead of a private mount namespace made for the command. A
// nil v is Start. Each of before runs on the thread that forks cmd, once
// it has joined n and v, before the fork: what it changes of the thread
// (a cgroup v1 it moves it into, see cgroup.Group.Prepare) cmd inherits,
// and the thread is discarded after.
//
// Equivalent to: nsenter --net=NETNS --mount=VIEW.mnt --uts=VIEW.uts CMD... &
func (n *NS) StartIn(v *View, cmd *exec.Cmd, before ...func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		errc <- n.enterForExec(v, func() error {
			for _, b := range before {
				if b == nil {
					continue
				}
				if err := b(); err != nil {
					return err
				}
			}
			return cmd.Start()
		})
	}()
	return <-errc
}

// enterForExec joins n and its own mounts on the calling (locked) thread,
// then runs fn there: v's when v is not nil, else a private mount
// namespace made as ip netns exec makes it.
func (n *NS) enterForExec(v *View, fn func() error) error {
	if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter namespace %s: %w", n.Name, err)
	}
	if v != nil {
		if err := enterView(v); err != nil {
			return fmt.Errorf("in %s: %w", n.Name, err)
		}
		if err := ensureSys(); err != nil {
			return fmt.Errorf("in %s: %w", n.Name, err)
		}
		return fn()
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("in %s: private mount namespace: %w", n.Name, err)
	}
	// Keep our mounts from propagating back to the host.
	if err := unix.Mount("", "/", "none", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("in %s: make / a slave mount: %w", n.Name, err)
	}
	if err := remountSys(); err != nil {
		return fmt.Errorf("in %s: %w", n.Name, err)
	}
	if err := bindEtc(n.Name); err != nil {
		return fmt.Errorf("in %s: %w", n.Name, err)
	}
	return fn()
}
