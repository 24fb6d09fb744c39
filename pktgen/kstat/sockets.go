package kstat

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TCPSocket is one TCP connection of a namespace as sock_diag gives it
// (what ss -ti shows): its ends, state, and TCP_INFO's counters now.
type TCPSocket struct {
	Local, Remote netip.AddrPort
	State         string
	BytesAcked    uint64 // sent and acknowledged, so far
	BytesReceived uint64 // received in order, so far
	Retrans       uint32 // segments retransmitted, so far
	Cwnd          uint32 // segments
	SRTT          time.Duration
}

// ErrNoTCPDiag is TCPSockets' error on a kernel without TCP sock_diag
// (CONFIG_INET_TCP_DIAG, or its module tcp_diag not loaded).
var ErrNoTCPDiag = errors.New("the kernel lists no TCP sockets through sock_diag (tcp_diag: CONFIG_INET_TCP_DIAG, or its module not loaded)")

// tcpStates are the kernel's TCP states by number (include/net/tcp_states.h).
var tcpStates = map[uint8]string{1: "established", 2: "syn-sent", 3: "syn-recv", 4: "fin-wait-1", 5: "fin-wait-2", 6: "time-wait",
	7: "close", 8: "close-wait", 9: "last-ack", 10: "listen", 11: "closing", 12: "new-syn-recv"}

// TCPSockets lists the TCP connections of namespace n, IPv4 and IPv6,
// but listeners and those in time-wait (which keep no TCP_INFO). The
// sock_diag socket is opened inside n (a netlink socket belongs to the
// namespace it is opened in), used and closed.
func TCPSockets(n *ns.NS) ([]TCPSocket, error) {
	var out []TCPSocket
	err := n.Do(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_INET_DIAG)
		if err != nil {
			return err
		}
		defer h.Close()
		for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
			resp, err := h.SocketDiagTCPInfo(family)
			if errors.Is(err, unix.ENOENT) {
				return ErrNoTCPDiag // the kernel has no tcp_diag (a module not loaded)
			}
			if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
				return err
			}
			out = append(out, tcpSockets(resp)...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("TCP sockets of %s: %w", n.Name, err)
	}
	return out, nil
}

// tcpSockets keeps the connections of a sock_diag dump.
func tcpSockets(resp []*netlink.InetDiagTCPInfoResp) []TCPSocket {
	var out []TCPSocket
	for _, r := range resp {
		s, i := r.InetDiagMsg, r.TCPInfo
		if s == nil || i == nil || s.State == 10 || s.State == 6 {
			continue
		}
		local, _ := netip.AddrFromSlice(s.ID.Source)
		remote, _ := netip.AddrFromSlice(s.ID.Destination)
		out = append(out, TCPSocket{Local: netip.AddrPortFrom(local.Unmap(), s.ID.SourcePort), Remote: netip.AddrPortFrom(remote.Unmap(), s.ID.DestinationPort),
			State: tcpStates[s.State], BytesAcked: i.Bytes_acked, BytesReceived: i.Bytes_received, Retrans: i.Total_retrans, Cwnd: i.Snd_cwnd,
			SRTT: time.Duration(i.Rtt) * time.Microsecond})
	}
	return out
}
