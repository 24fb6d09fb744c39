package userspace

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openSocket opens an AF_PACKET raw socket bound to ifindex, on the calling
// thread's namespace (call it from a thread inside the sender's namespace).
// It is bound with protocol 0, so it receives nothing; bypass sets
// PACKET_QDISC_BYPASS (the packets skip the qdisc, as pktgen's do).
func openSocket(ifindex int, bypass bool) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind AF_PACKET socket to ifindex %d: %w", ifindex, err)
	}
	if bypass {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
		}
	}
	// A large send buffer keeps sendmmsg from blocking on skb memory. Past
	// net.core.wmem_max only the host's root may force it; without (a
	// rootless lab) the socket gets what wmem_max allows, and a full
	// buffer makes sendmmsg wait, which the pacer counts as the sender's.
	err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 16<<20)
	if errors.Is(err, unix.EPERM) {
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 16<<20)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("SO_SNDBUFFORCE: %w", err)
	}
	return fd, nil
}

// sender sends one thread's packets on one socket.
type sender struct {
	fd      int
	ifindex int
	b       *builder
	batch   int
	count   uint64        // 0: until the duration or cancel
	dur     time.Duration // 0: until count
	gap     time.Duration // between packets; 0: as fast as possible
	cpu     int           // pin to this CPU; -1: no pinning

	sent, errs  uint64
	first, last time.Time
	skipped     time.Duration             // schedule time given up because the thread did not run (see pacer)
	addr        unix.RawSockaddrLinklayer // where the batch goes (the headers point at it)
}

// run sends until count, duration or cancel, on a locked OS thread (pinned
// when asked). Cancel is checked between batches, which last well under a
// millisecond, so a cancelled run returns within about a millisecond
// (TestPrivilegedCancelCountsWhatWasSent measured 0.26 to 0.54 ms).
func (s *sender) run(ctx context.Context) error {
	runtime.LockOSThread()
	if s.cpu >= 0 {
		// A pinned thread is not handed back to the runtime: its
		// goroutine ends locked and the thread with it.
		var set unix.CPUSet
		set.Set(s.cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin to CPU %d: %w", s.cpu, err)
		}
	} else {
		defer runtime.UnlockOSThread()
	}
	bufs, iovs, msgs := s.buffers()
	start := time.Now()
	p := pacer{start: start, gap: s.gap, last: start}
	defer func() { s.skipped = p.skipped }()
	var end time.Time
	if s.dur > 0 {
		end = p.start.Add(s.dur)
	}
	s.first = p.start
	for {
		now := time.Now()
		if ctx.Err() != nil || (!end.IsZero() && !now.Before(end)) {
			return nil
		}
		n := s.batch
		handed := s.sent + s.errs // packets the device took, delivered or dropped
		if s.count > 0 {
			if handed >= s.count {
				return nil
			}
			n = int(min(uint64(n), s.count-handed))
		}
		var ok bool
		if n, now, ok = p.next(ctx, handed, n, now); !ok {
			return nil
		}
		for i := 0; i < n; i++ {
			iovs[i].SetLen(s.b.fill(bufs[i], now))
		}
		if err := s.send(msgs[:n]); err != nil {
			return err
		}
		s.last = time.Now()
	}
}

// buffers makes the batch's packet buffers and the sendmmsg headers that
// point at them.
func (s *sender) buffers() ([][]byte, []unix.Iovec, []mmsghdr) {
	frame := s.b.maxLen()
	bufs := make([][]byte, s.batch)
	iovs := make([]unix.Iovec, s.batch)
	msgs := make([]mmsghdr, s.batch)
	s.addr = unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(s.b.etherType()), Ifindex: int32(s.ifindex)}
	for i := range bufs {
		bufs[i] = make([]byte, frame)
		iovs[i].Base = &bufs[i][0]
		msgs[i].hdr.Name = (*byte)(unsafe.Pointer(&s.addr))
		msgs[i].hdr.Namelen = uint32(unsafe.Sizeof(s.addr))
		msgs[i].hdr.Iov = &iovs[i]
		msgs[i].hdr.Iovlen = 1
	}
	return bufs, iovs, msgs
}

// pacer spaces packets gap apart on a schedule from start.
type pacer struct {
	start time.Time
	gap   time.Duration // 0: as fast as possible
	last  time.Time     // when the thread was last seen running: next's last return, or the start of its sleep
	// skipped is the schedule's time given up because the thread did not
	// run: each time it came back more than maxLag after it was last seen
	// and owed more than maxLag and maxOwed packets, how far behind it
	// was (at most the time it was away). A sender too slow for its rate
	// falls behind a little at every call: it gives up schedule time too,
	// but that is the sender's limit, not a stall, and is not counted.
	skipped time.Duration
}

// Pacing bounds. A paced sender sends at most what is due within the
// next paceWindow: a wider window sends bursts at the device's speed that
// a router under test drops (its backlog is shared with its own output)
// although the average rate is one it holds. A sender that fell behind
// by more than maxLag and maxOwed packets (its thread was not running)
// takes up the schedule from now instead of sending what it owes in one
// burst. Below maxOwed it catches up: at a low rate a timer that fires a
// millisecond late owes a packet or two, and giving that up counts as
// loss against the rate asked (a 0.5 s trial at 898 pps of 1518-byte
// frames through a shaper gave up 45 ms so and failed an NDR search).
const (
	paceWindow = 20 * time.Microsecond
	maxLag     = time.Millisecond
	maxOwed    = 8
)

// next says how many of n packets go now: it waits when the sender is
// early, and returns the time after the wait; false when ctx is done.
func (p *pacer) next(ctx context.Context, handed uint64, n int, now time.Time) (int, time.Time, bool) {
	if p.gap == 0 {
		return n, now, true
	}
	due := p.start.Add(time.Duration(handed) * p.gap)
	if wait := due.Sub(now); wait > 0 {
		p.last = now // it ran until now, then sleeps
		if !sleep(ctx, wait) {
			return 0, now, false
		}
		now = time.Now()
	}
	if lag := now.Sub(due); lag > maxLag && lag > maxOwed*p.gap {
		p.start = p.start.Add(lag) // the schedule starts again from now
		if away := now.Sub(p.last); away > maxLag {
			p.skipped += min(lag, away)
		}
		due = now
	}
	p.last = now
	ahead := int((now.Sub(due)+paceWindow)/p.gap) + 1
	return max(1, min(n, ahead)), now, true
}

// send hands the batch to the kernel with one sendmmsg, retrying what it did
// not take. A packet the device took but dropped is counted in errs, as
// pktgen counts it, and not sent again: that is NET_XMIT_DROP, which veth
// returns when its peer's backlog or ring is full, and AF_PACKET turns
// into ENOBUFS.
//
// sendmmsg reports the first message's error only when it sent nothing.
// When message k of a batch fails after k were sent, it returns k and the
// error is lost; the failed message was nevertheless handed to the device
// (a qdisc-bypass socket has no other way to fail once its skb is built
// and the sender buffer has room, which a veth releases at once). So the
// message after a short count is counted as dropped and skipped, not sent
// again: resending it is how an earlier version came to count fewer
// drops than the veth did (138932 against 142308 in one overloaded run).
// bench reconciles this count with the sender interface's counters.
//
// (Measured against a PACKET_TX_RING on a veth pair here: sendmmsg of 256
// sent 1.62-1.64 Mpps, the ring 0.95-1.48 Mpps, so sendmmsg it is.)
func (s *sender) send(msgs []mmsghdr) error {
	for len(msgs) > 0 {
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
		switch {
		case errno == 0 && int(r) < len(msgs):
			s.sent += uint64(r)
			s.errs++ // message r failed; its error was lost
			msgs = msgs[r+1:]
		case errno == 0:
			s.sent += uint64(r)
			msgs = msgs[r:]
		case errno == unix.ENOBUFS:
			s.errs++
			msgs = msgs[1:]
		case errno == unix.EINTR || errno == unix.EAGAIN:
			runtime.Gosched()
		default:
			return fmt.Errorf("sendmmsg: %w", errno)
		}
	}
	return nil
}

// preciseSleep is the longest wait slept with nanosleep(2) on the
// sender's own thread instead of a Go timer: a timer's wait shorter than a
// millisecond ends a millisecond or more late (the runtime's netpoller
// waits in whole milliseconds when its thread has nothing else to do), and
// a pacer at 10 kpps woken so found itself behind at every packet and sent
// 900 pps. The kernel's hrtimer wakes within the thread's timer slack
// (50 us).
const preciseSleep = 2 * time.Millisecond

// sleep waits d or until ctx is done; it reports whether to go on. It
// runs on the sender's thread, which it blocks for waits up to
// preciseSleep.
func sleep(ctx context.Context, d time.Duration) bool {
	if d < 50*time.Microsecond {
		// Timers are too coarse for this: spin.
		end := time.Now().Add(d)
		for time.Now().Before(end) {
		}
		return ctx.Err() == nil
	}
	if d <= preciseSleep {
		ts := unix.NsecToTimespec(d.Nanoseconds())
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// mmsghdr is struct mmsghdr.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
