package ns

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// DoSysfs runs fn on a fresh OS thread that has joined n and sees n's own
// sysfs on /sys: the thread gets a private mount namespace (its changes
// never reach the host's) and mounts a new sysfs there, as `ip netns exec`
// does, because sysfs shows the network namespace of whoever mounted it.
// Use it for per-interface files that exist only in sysfs (queues'
// rps_cpus and xps_cpus, threaded). The thread is discarded afterwards: it
// cannot rejoin the process's mount namespace cheaply, so it never runs
// other code.
//
// Equivalent to: ip netns exec NAME sh -c '...'
func (n *NS) DoSysfs(fn func() error) error {
	return private(n.fd, n.Name, remountSys, fn)
}

// private runs fn on a throwaway thread in the network namespace fd
// refers to, in a mount namespace of its own where mount has run.
func private(fd int, name string, mount func() error, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter namespace %s: %w", name, err)
			return
		}
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("private mount namespace for %s: %w", name, err)
			return
		}
		// Keep the new mount from propagating back to the host.
		if err := unix.Mount("", "/", "none", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
			errc <- fmt.Errorf("make / a slave mount for %s: %w", name, err)
			return
		}
		if err := mount(); err != nil {
			errc <- fmt.Errorf("file system of %s: %w", name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
