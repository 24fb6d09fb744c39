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

// minProbe is the smallest packet every link carries: 576 bytes of IPv4
// (RFC 791), 1280 of IPv6 (RFC 8200).
func minProbe(to netip.Addr) int {
	if to.Is4() {
		return 576
	}
	return 1280
}

// LargestAnswered sends ICMP echo requests to `to` with the don't-fragment
// bit set, from this process's network namespace (the host's), and
// returns size when a packet of size bytes (IP header included) is
// answered, else the largest size that is. A frame too large for the
// underlay is lost silently on many networks (a switch drops it), which
// is how a VXLAN link that does not fit shows itself only for large
// frames; this asks before anything is built. IPv4 (DF set) and IPv6 (no
// fragment made by the sender: IPV6_DONTFRAG).
func LargestAnswered(ctx context.Context, to netip.Addr, size int) (int, error) {
	p, err := newPinger(to)
	if err != nil {
		return 0, err
	}
	defer unix.Close(p.fd)
	if p.answered(ctx, size) {
		return size, nil
	}
	least := minProbe(to)
	if !p.answered(ctx, least) {
		return 0, fmt.Errorf("no echo reply from %s even to %d bytes: the underlay does not reach it, or ICMP echo is filtered", to, least)
	}
	lo, hi := least, size // lo answered, hi not
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

// pinger is a raw ICMP (or ICMPv6) socket that sets DF (or makes no
// fragment) and ignores any path MTU the kernel has cached
// (IP_PMTUDISC_PROBE): a packet larger than the interface's MTU fails to
// send, one larger than a hop's is lost.
type pinger struct {
	fd  int
	to  unix.Sockaddr
	v6  bool
	id  uint16
	seq uint16
	buf []byte // a packet received
}

func newPinger(to netip.Addr) (*pinger, error) {
	p := &pinger{v6: !to.Is4(), id: uint16(os.Getpid()), buf: make([]byte, 65536)}
	family, proto, level, opt, probe := unix.AF_INET, unix.IPPROTO_ICMP, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE
	if p.v6 {
		p.to = &unix.SockaddrInet6{Addr: to.As16()}
		family, proto, level, opt, probe = unix.AF_INET6, unix.IPPROTO_ICMPV6, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE
	} else {
		p.to = &unix.SockaddrInet4{Addr: to.As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("open an ICMP socket to probe the underlay's MTU: %w", err)
	}
	p.fd = fd
	err = unix.SetsockoptInt(fd, level, opt, probe)
	if err == nil && p.v6 {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set DF on the probe: %w", err)
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set the probe's receive timeout: %w", err)
	}
	return p, nil
}

// header is the IP header's size, which a probe's size includes.
func (p *pinger) header() int {
	if p.v6 {
		return 40
	}
	return 20
}

// answered sends up to three echo requests of size bytes and reports
// whether one was answered within 300 ms.
func (p *pinger) answered(ctx context.Context, size int) bool {
	for range 3 {
		if ctx.Err() != nil {
			return false
		}
		p.seq++
		err := unix.Sendto(p.fd, echoRequest(p.v6, p.id, p.seq, size-p.header()), 0, p.to)
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
// packet to this namespace; an IPv4 one with its IP header).
func (p *pinger) reply(seq uint16, wait time.Duration) bool {
	buf := p.buf
	for end := time.Now().Add(wait); time.Now().Before(end); {
		n, from, err := unix.Recvfrom(p.fd, buf, 0)
		if err != nil || !p.fromTarget(from) {
			continue
		}
		icmp, replyType := buf[:n], byte(129) // ICMPv6 echo reply, no IP header
		if !p.v6 {
			if n < 20 {
				continue
			}
			icmp, replyType = buf[int(buf[0]&0x0f)*4:n], 0
		}
		if len(icmp) >= 8 && icmp[0] == replyType && binary.BigEndian.Uint16(icmp[4:]) == p.id && binary.BigEndian.Uint16(icmp[6:]) == seq {
			return true
		}
	}
	return false
}

// fromTarget says whether a packet came from the probed address.
func (p *pinger) fromTarget(from unix.Sockaddr) bool {
	switch sa := from.(type) {
	case *unix.SockaddrInet4:
		to, ok := p.to.(*unix.SockaddrInet4)
		return ok && sa.Addr == to.Addr
	case *unix.SockaddrInet6:
		to, ok := p.to.(*unix.SockaddrInet6)
		return ok && sa.Addr == to.Addr
	}
	return false
}

// echoRequest is an ICMP (or ICMPv6) echo request of n bytes. The
// kernel sums an ICMPv6 message itself (it covers the IPv6 addresses).
func echoRequest(v6 bool, id, seq uint16, n int) []byte {
	b := make([]byte, max(n, 8))
	b[0] = 8
	if v6 {
		b[0] = 128
	}
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	if !v6 {
		binary.BigEndian.PutUint16(b[2:], probe.Checksum(b))
	}
	return b
}
