package ns

import (
	"context"
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Removing a named namespace only drops a reference: the kernel tears the
// namespace down (its devices, routes, sockets) later, in the background,
// on one ordered work queue that takes up every namespace released since
// its last pass as one batch. A destroy returns long before that work is
// done, and a deploy started meanwhile shares the CPUs with it.

// Settle waits until the kernel has torn down every network namespace
// released before the call. It watches a probe: a namespace it releases
// itself, holding one end of a veth whose other end is in a second
// namespace it keeps; the kept end is deleted (an event on the kept
// namespace's link subscription) when the probe's batch has removed its
// devices. It releases a second probe once the first is gone:
// that one is taken up by the queue's next pass, which starts only when the
// first probe's batch has finished entirely, so when its end vanishes too
// everything released before the call is gone. The probes have no names
// and are seen by no one. It runs in the caller's namespaces and changes
// nothing in them.
func Settle(ctx context.Context) error {
	for range 2 {
		if err := probeTeardown(ctx); err != nil {
			return err
		}
	}
	return nil
}

// probeTeardown releases one probe and waits for its veth end to go.
func probeTeardown(ctx context.Context) error {
	keep, err := unnamed()
	if err != nil {
		return err
	}
	defer keep.Close()
	probe, err := unnamed()
	if err != nil {
		return err
	}
	h, err := keep.NetlinkHandle()
	if err != nil {
		probe.Close()
		return fmt.Errorf("settle: %w", err)
	}
	defer h.Close()
	err = h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "settle"}, PeerName: "settle", PeerNamespace: netlink.NsFd(probe.Fd())})
	if err != nil {
		probe.Close()
		return fmt.Errorf("settle: veth into the probe namespace: %w", err)
	}
	wait, err := watchRemoval(keep, "settle")
	if err != nil {
		probe.Close()
		return err
	}
	probe.Close() // its last reference: the kernel queues its teardown
	return wait(ctx)
}

// watchRemoval subscribes to the link changes of namespace n (its socket
// opened there). The returned wait blocks until the link named name is
// deleted in n, or ctx ends, and then ends the subscription.
func watchRemoval(n *NS, name string) (wait func(context.Context) error, err error) {
	updates := make(chan netlink.LinkUpdate)
	done := make(chan struct{})
	err = n.Do(func() error { return netlink.LinkSubscribe(updates, done) })
	if err != nil {
		return nil, fmt.Errorf("settle: watch the links of %s: %w", n.Name, err)
	}
	return func(ctx context.Context) error {
		defer func() {
			close(done)
			for range updates { // until the subscription's reader has ended
			}
		}()
		for {
			select {
			case u, ok := <-updates:
				if !ok {
					return fmt.Errorf("settle: the watch of %s's links ended before %s went", n.Name, name)
				}
				if u.Header.Type == unix.RTM_DELLINK && u.Attrs().Name == name {
					return nil
				}
			case <-ctx.Done():
				return fmt.Errorf("settle: the kernel was still tearing namespaces down: %w", ctx.Err())
			}
		}
	}, nil
}

// unnamed creates a network namespace with no name: only the returned
// descriptor holds it, so closing it releases the namespace.
func unnamed() (*NS, error) {
	type result struct {
		n   *NS
		err error
	}
	rc := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			rc <- result{nil, fmt.Errorf("open this thread's namespace: %w", err)}
			return // locked: the thread dies
		}
		defer goHome(home)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			rc <- result{nil, fmt.Errorf("an unnamed network namespace: %w", err)}
			return
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			rc <- result{nil, fmt.Errorf("open the unnamed namespace: %w", err)}
			return
		}
		rc <- result{&NS{Name: "(settle probe)", fd: fd}, nil}
	}()
	r := <-rc
	return r.n, r.err
}
