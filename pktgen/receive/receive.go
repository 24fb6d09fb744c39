// Package receive is the receiver's side of a traffic run: a packet
// socket in the receiver's network namespace reads every packet of the
// run (pktgen's header in its UDP payload), with the kernel's receive
// timestamp, and accounts for its one-way latency and its sequence number.
// Sender and receiver are on one host and read one clock
// (CLOCK_REALTIME), so the latency is one-way and exact to the send
// stamp's resolution.
//
// The socket has a TPACKET_V3 ring (ring.go) and a kernel filter that
// passes only the run's packets (filter.go); what it costs is measured
// by make bench-latency.
package receive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// Options says what the reader reads.
type Options struct {
	Ifindex int    // the receiver's interface, in its namespace
	Port    uint16 // the run's UDP destination port
	IPv6    bool
	// Nanoseconds says the sender writes the nanoseconds of its stamp
	// after pktgen's header (the userspace engine does).
	Nanoseconds bool
	// Thread maps a packet's UDP source port to its sender thread; nil:
	// one thread.
	Thread func(srcPort uint16) int
	// Every, a power of two above 1, reads only the packets whose
	// sequence number is a multiple of it (the kernel's filter drops the
	// rest): latency from a sample, at a fraction of the cost, and no
	// accounting by sequence. 0 or 1: every packet.
	Every uint32
	// ClockOffset is the receiver's clock less the sender's, when they
	// are on two hosts: each arrival's time is taken less it.
	ClockOffset time.Duration
}

// Reader reads a run's packets in the receiver's namespace.
type Reader struct {
	fd   int
	ring *ring
	opts Options
	t    *Tracker
	done chan error
	stop chan struct{}
	read uint64 // decoded packets (the loop's goroutine only, until done)
	bad  uint64
}

// Result is what a reader saw.
type Result struct {
	Tracker *Tracker
	Read    uint64 // packets read from the ring
	// Missed counts packets the kernel passed the filter but could not
	// put in the ring (it was full): the sequence accounting counts them
	// as lost, and they are not.
	Missed uint64
	Bad    uint64 // packets the filter passed that did not decode
}

// Open opens the reader's socket in namespace n (the socket stays there;
// the calling thread does not move) and starts reading. Stop ends it.
//
// Equivalent to: tcpdump -i IF -j adapter_unsynced 'udp dst port P' in NS
func Open(n *ns.NS, o Options) (*Reader, error) {
	var fd int
	err := n.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // receives nothing until bound
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open the receiver's packet socket in %s: %w", n.Name, err)
	}
	r := &Reader{fd: fd, opts: o, t: NewTracker(), done: make(chan error, 1), stop: make(chan struct{})}
	if err := r.setup(); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("receiver in %s: %w", n.Name, err)
	}
	go func() { r.done <- r.loop() }()
	return r, nil
}

// setup attaches the filter and the ring, then binds the socket to the
// interface: no packet reaches the ring unfiltered.
func (r *Reader) setup() error {
	if e := r.opts.Every; e > 1 && e&(e-1) != 0 {
		return fmt.Errorf("read every %dth packet: give a power of two", e)
	}
	if err := attachFilter(r.fd, filter(r.opts.Port, r.opts.IPv6, r.opts.Every)); err != nil {
		return err
	}
	var err error
	if r.ring, err = setupRing(r.fd); err != nil {
		return err
	}
	addr := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: r.opts.Ifindex}
	if err := unix.Bind(r.fd, addr); err != nil {
		_ = r.ring.close() // the bind's error is the one to report
		return fmt.Errorf("bind to interface %d: %w", r.opts.Ifindex, err)
	}
	return nil
}

// loop reads the ring until stop, then drains it once more.
func (r *Reader) loop() error {
	each := func(frame []byte, wire int, sec, nsec uint32) {
		st, ok := decode(frame, r.opts.Nanoseconds)
		if !ok {
			r.bad++
			return
		}
		thread := 0
		if r.opts.Thread != nil {
			thread = r.opts.Thread(st.SrcPort)
		}
		r.read++
		r.t.Add(thread, st.Seq, st.SentNs, int64(sec)*1e9+int64(nsec)-int64(r.opts.ClockOffset))
		r.t.AddSize(wire + 4) // FCS
	}
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN | unix.POLLERR}}
	for {
		r.ring.drain(each)
		select {
		case <-r.stop:
			r.ring.drain(each)
			return nil
		default:
		}
		if _, err := unix.Poll(fds, 20); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll the receive ring: %w", err)
		}
	}
}

// Stop ends the reader, once the packets still on their way had time to
// arrive (linger), and returns what it saw.
func (r *Reader) Stop(ctx context.Context, linger time.Duration) (*Result, error) {
	select {
	case <-time.After(linger + retireTimeout*time.Millisecond): // a partly filled block is handed over after retireTimeout
	case <-ctx.Done():
	}
	close(r.stop)
	err := <-r.done
	stats, serr := unix.GetsockoptTpacketStatsV3(r.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if serr != nil {
		err = errors.Join(err, fmt.Errorf("read the receive ring's statistics: %w", serr))
	}
	if cerr := r.ring.close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("unmap the receive ring: %w", cerr))
	}
	unix.Close(r.fd)
	res := &Result{Tracker: r.t, Read: r.read, Bad: r.bad}
	if stats != nil {
		res.Missed = uint64(stats.Drops)
	}
	return res, err
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
