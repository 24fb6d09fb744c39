package ns

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Scratch runs fn on a thread inside a new, unnamed network namespace that
// nothing else can see, and that the kernel frees when fn returns: the
// thread is never given back (it ends with its goroutine), so no name, file
// or object of fn's outlives the call. It is for asking the kernel whether
// it can do something (create a qdisc) without doing it where anyone
// looks.
func Scratch(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("a scratch network namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// ScratchHandle is Scratch with a netlink handle of the scratch
// namespace, which fn asks the kernel through.
func ScratchHandle(fn func(h *netlink.Handle) error) error {
	return Scratch(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		return fn(h)
	})
}
