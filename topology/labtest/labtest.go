// Package labtest holds helpers for nslab's privileged tests: skipping when
// not root, random lab names, and a real ICMP echo from inside a namespace.
// Only tests import it.
package labtest

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/ns"
)

// SkipUnlessRoot skips privileged tests for unprivileged runs.
func SkipUnlessRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)")
	}
}

// Name returns a random name of the form prefix + 6 hex digits, short enough
// for lab names (12) and, with a short node name, interface names (15).
func Name(prefix string) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b)
}

// Rename gives a topology file another lab name and a namespace prefix of
// name + "-", so a test's lab never collides with anything else.
func Rename(data []byte, name string) []byte {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "name:"):
			out = append(out, "name: "+name, "prefix: "+name+"-")
		case strings.HasPrefix(line, "prefix:"):
		default:
			out = append(out, line)
		}
	}
	return []byte(strings.Join(out, "\n"))
}

// Ping sends count ICMP echo requests to dst from inside namespace nsName
// (under dir) and returns how many replies came back. It opens a raw ICMP
// socket on a thread inside the namespace, so the packets really cross the
// lab's links.
func Ping(dir, nsName string, dst netip.Addr, count int, timeout time.Duration) (int, error) {
	n, err := ns.Open(dir, nsName)
	if err != nil {
		return 0, err
	}
	defer n.Close()
	replies := 0
	err = n.Do(func() error {
		conn, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
		if err != nil {
			return fmt.Errorf("icmp socket: %w", err)
		}
		defer conn.Close()
		id := uint16(os.Getpid())
		for seq := 0; seq < count; seq++ {
			if ok, err := echo(conn, dst, id, uint16(seq), timeout); err != nil {
				return err
			} else if ok {
				replies++
			}
		}
		return nil
	})
	return replies, err
}

func echo(conn net.PacketConn, dst netip.Addr, id, seq uint16, timeout time.Duration) (bool, error) {
	msg := make([]byte, 16)
	msg[0] = 8 // echo request
	binary.BigEndian.PutUint16(msg[4:], id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	copy(msg[8:], "nslab-ok")
	binary.BigEndian.PutUint16(msg[2:], Checksum(msg))
	if _, err := conn.WriteTo(msg, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
		return false, fmt.Errorf("send echo to %s: %w", dst, err)
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 1500)
	for {
		conn.SetReadDeadline(deadline)
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return false, nil
			}
			return false, err
		}
		ip, _ := from.(*net.IPAddr)
		if n >= 8 && buf[0] == 0 && ip != nil && ip.IP.Equal(dst.AsSlice()) &&
			binary.BigEndian.Uint16(buf[4:]) == id && binary.BigEndian.Uint16(buf[6:]) == seq {
			return true, nil
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

// Root reports whether privileged tests and benchmarks can run.
func Root() bool { return os.Geteuid() == 0 }

// Namespace creates a throwaway named namespace under dir with lo up, and
// removes it when the test ends.
func Namespace(t *testing.T, dir string) string {
	t.Helper()
	c, err := ns.NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := Name("n")
	n, err := c.Create(name, nil)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	t.Cleanup(func() { ns.Remove(dir, name) })
	h, err := n.NetlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	return name
}
