// Package probe sends ICMP echo requests from inside a network namespace,
// without a ping binary: the socket is opened on a thread inside the
// namespace, so the echo really leaves through that namespace's routes and
// links; sending and reading then happen from any thread. IPv4 and IPv6.
package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/ns"
)

// Result is the outcome of an echo probe.
type Result struct {
	Sent, Received int
	RTT            time.Duration // of the first reply; 0 without one
	// Err is why nothing could be sent (for example the sender has no
	// route: ENETUNREACH); nil when echoes went out.
	Err error
}

// OK reports whether a reply came back.
func (r Result) OK() bool { return r.Received > 0 }

// Echo sends up to count echo requests to dst from namespace n, one at a
// time, each waiting up to timeout, and stops at the first reply unless
// all is set. Errors are about the probe itself (the namespace cannot be
// entered, no raw socket); an unreachable destination is a Result without
// replies.
func Echo(n *ns.NS, dst netip.Addr, count int, timeout time.Duration, all bool) (Result, error) {
	return EchoFrom(n, netip.Addr{}, dst, count, timeout, all)
}

// EchoFrom is Echo with the requests' source address src (one of the
// namespace's own, as ping -I gives it; invalid: the kernel's choice by
// the route). The socket is bound to src, so only replies to it are read.
func EchoFrom(n *ns.NS, src, dst netip.Addr, count int, timeout time.Duration, all bool) (Result, error) {
	conn, err := open(n, src, dst.Is6())
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = conn.Close() }() // a raw socket only read from
	id := uint16(rand.Uint32())         // tells our replies from other probes' on the same namespace
	var res Result
	for seq := 0; seq < count; seq++ {
		rtt, ok, err := echo(conn, dst, id, uint16(seq), timeout)
		if err != nil {
			res.Err = err
			return res, nil
		}
		res.Sent++
		if ok {
			if res.Received == 0 {
				res.RTT = rtt
			}
			res.Received++
			if !all {
				break
			}
		}
	}
	return res, nil
}

// open makes a raw ICMP (or ICMPv6) socket inside the namespace, bound
// to src when it is valid.
func open(n *ns.NS, src netip.Addr, v6 bool) (net.PacketConn, error) {
	var conn net.PacketConn
	err := n.Do(func() error {
		network, laddr := "ip4:icmp", "0.0.0.0"
		if v6 {
			network, laddr = "ip6:ipv6-icmp", "::"
		}
		if src.IsValid() {
			laddr = src.String()
		}
		var err error
		if conn, err = net.ListenPacket(network, laddr); err != nil {
			return fmt.Errorf("icmp socket in %s: %w", n.Name, err)
		}
		return nil
	})
	return conn, err
}

// ICMP types of echo request and reply.
const (
	echoRequest4, echoReply4 = 8, 0
	echoRequest6, echoReply6 = 128, 129
)

func echo(conn net.PacketConn, dst netip.Addr, id, seq uint16, timeout time.Duration) (time.Duration, bool, error) {
	msg := make([]byte, 16)
	request, reply := byte(echoRequest4), byte(echoReply4)
	if dst.Is6() {
		request, reply = echoRequest6, echoReply6
	}
	msg[0] = request
	binary.BigEndian.PutUint16(msg[4:], id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	copy(msg[8:], "nslab-ok")
	if dst.Is4() {
		binary.BigEndian.PutUint16(msg[2:], Checksum(msg)) // the kernel fills ICMPv6's
	}
	start := time.Now()
	if _, err := conn.WriteTo(msg, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return 0, false, errno // what the kernel said, e.g. network is unreachable
		}
		return 0, false, fmt.Errorf("send echo to %s: %w", dst, err)
	}
	deadline := start.Add(timeout)
	buf := make([]byte, 1500)
	for {
		if err := conn.SetReadDeadline(deadline); err != nil {
			return 0, false, err
		}
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return 0, false, nil
			}
			return 0, false, err
		}
		ip, _ := from.(*net.IPAddr)
		if n >= 8 && buf[0] == reply && ip != nil && ip.IP.Equal(dst.AsSlice()) &&
			binary.BigEndian.Uint16(buf[4:]) == id && binary.BigEndian.Uint16(buf[6:]) == seq {
			return time.Since(start), true, nil
		}
	}
}

// Checksum is the Internet checksum (RFC 1071).
func Checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
