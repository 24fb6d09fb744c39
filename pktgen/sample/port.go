package sample

import (
	"fmt"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// UDPPort counts the UDP datagrams to one destination port that an
// interface receives: where several traffic runs arrive at one interface,
// its rx counter carries them all, and the port tells them apart. It is a
// packet socket bound to the interface with a kernel filter that accepts
// that port only; the kernel's PACKET_STATISTICS counts every accepted
// frame, those the never-read socket had no room for included.
type UDPPort struct {
	*Neighbours // the same counting socket, over another filter
	Port        int
}

// udp4Filter accepts unfragmented IPv4 UDP to port (protocol at byte 23 of
// the frame, fragment offset at 20, the UDP header after the IP header's
// own length).
func udp4Filter(port int) []unix.SockFilter {
	return assemble(append([]bpfIns{
		{code: ldb, k: 23},
		{code: jeq, k: unix.IPPROTO_UDP, jf: "drop"},
		{code: ldh, k: 20},
		{code: jset, k: 0x1fff, jt: "drop"}, // a fragment after the first
		{code: ldxmsh, k: 14},
		{code: ldhx, k: 14 + 2},
		{code: jeq, k: uint32(port), jf: "drop"},
	}, keepOrDrop(64)...))
}

// udp6Filter accepts IPv6 UDP without extension headers to port (next
// header at byte 20, the destination port at byte 56).
func udp6Filter(port int) []unix.SockFilter {
	return assemble(append([]bpfIns{
		{code: ldb, k: 20},
		{code: jeq, k: unix.IPPROTO_UDP, jf: "drop"},
		{code: ldh, k: 56},
		{code: jeq, k: uint32(port), jf: "drop"},
	}, keepOrDrop(64)...))
}

// CountUDPPort opens the counter on interface ifindex of namespace n (on a
// thread inside it). Close it when done.
func CountUDPPort(n *ns.NS, ifindex int, ipv6 bool, port int) (*UDPPort, error) {
	c := &UDPPort{Neighbours: &Neighbours{}, Port: port}
	proto, filter := uint16(unix.ETH_P_IP), udp4Filter(port)
	if ipv6 {
		proto, filter = unix.ETH_P_IPV6, udp6Filter(port)
	}
	if err := c.open(n, ifindex, proto, filter); err != nil {
		return nil, fmt.Errorf("UDP port %d counter in %s: %w", port, n.Name, err)
	}
	return c, nil
}
