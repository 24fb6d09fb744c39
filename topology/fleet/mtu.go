package fleet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/nslab/nslab/topology/probe"
	"golang.org/x/sys/unix"
)

// minProbe is the smallest IPv4 packet every link carries (RFC 791).
const minProbe = 576

// LargestAnswered sends ICMP echo requests to `to` with the don't-fragment
// bit set, from this process's network namespace (the host's), and
// returns size when a packet of size bytes (IP header included) is
// answered, else the largest size that is. A frame too large for the
// underlay is lost silently on many networks (a switch drops it), which
// is how a VXLAN link that does not fit shows itself only for large
// frames; this asks before anything is built. IPv4 only.
func LargestAnswered(ctx context.Context, to netip.Addr, size int) (int, error) {
	if !to.Is4() {
		return size, nil // not probed: an IPv6 underlay's echo is not asked here
	}
	p, err := newPinger(to)
	if err != nil {
		return 0, err
	}
	defer unix.Close(p.fd)
	if p.answered(ctx, size) {
		return size, nil
	}
	if !p.answered(ctx, minProbe) {
		return 0, fmt.Errorf("no echo reply from %s even to %d bytes: the underlay does not reach it, or ICMP echo is filtered", to, minProbe)
	}
	lo, hi := minProbe, size // lo answered, hi not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if p.answered(ctx, mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// pinger is a raw ICMP socket that sets DF and ignores any path MTU the
// kernel has cached (IP_PMTUDISC_PROBE): a packet larger than the
// interface's MTU fails to send, one larger than a hop's is lost.
type pinger struct {
	fd  int
	to  unix.SockaddrInet4
	id  uint16
	seq uint16
	buf []byte // a packet received
}

func newPinger(to netip.Addr) (*pinger, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return nil, fmt.Errorf("open an ICMP socket to probe the underlay's MTU: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set DF on the probe: %w", err)
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set the probe's receive timeout: %w", err)
	}
	return &pinger{fd: fd, to: unix.SockaddrInet4{Addr: to.As4()}, id: uint16(os.Getpid()), buf: make([]byte, 65536)}, nil
}

// answered sends up to three echo requests of size bytes and reports
// whether one was answered within 300 ms.
func (p *pinger) answered(ctx context.Context, size int) bool {
	for range 3 {
		if ctx.Err() != nil {
			return false
		}
		p.seq++
		err := unix.Sendto(p.fd, echoRequest(p.id, p.seq, size-20), 0, &p.to)
		if errors.Is(err, unix.EMSGSIZE) {
			return false // larger than this host's own interface
		}
		if err == nil && p.reply(p.seq, 300*time.Millisecond) {
			return true
		}
	}
	return false
}

// reply waits for the echo reply of seq (a raw socket sees every ICMP
// packet to this namespace, with its IP header).
func (p *pinger) reply(seq uint16, wait time.Duration) bool {
	buf := p.buf
	for end := time.Now().Add(wait); time.Now().Before(end); {
		n, from, err := unix.Recvfrom(p.fd, buf, 0)
		if err != nil {
			continue
		}
		sa, ok := from.(*unix.SockaddrInet4)
		if !ok || sa.Addr != p.to.Addr || n < 20 {
			continue
		}
		icmp := buf[int(buf[0]&0x0f)*4 : n]
		if len(icmp) >= 8 && icmp[0] == 0 && binary.BigEndian.Uint16(icmp[4:]) == p.id && binary.BigEndian.Uint16(icmp[6:]) == seq {
			return true
		}
	}
	return false
}

// echoRequest is an ICMP echo request of n bytes.
func echoRequest(id, seq uint16, n int) []byte {
	b := make([]byte, max(n, 8))
	b[0] = 8
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	binary.BigEndian.PutUint16(b[2:], probe.Checksum(b))
	return b
}
