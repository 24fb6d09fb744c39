package sample

import (
	"fmt"
	"unsafe"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// Neighbours counts the control frames an interface receives that are not
// a run's (see controlFilter): ARP, IPv6's own (neighbour discovery, and
// the MLD reports a node sends for its addresses in its first seconds; a
// bridge with an address sends IGMP reports too), ICMP, and the routing
// daemons' (OSPF hellos and updates, BGP's TCP, RIP's UDP).
// They cross a lab's links during a run (a router re-probing its next hop
// once its entry went stale, a freshly deployed lab's multicast listener
// reports, a daemon's hello every second) without being the run's
// packets. One ETH_P_ALL socket per interface, whose kernel filter keeps
// only them, so the run's own packets never reach it; it counts on a
// bridge port too, where the bridge takes frames before any socket bound
// to a protocol sees them.
type Neighbours struct {
	fds []int
}

// CountNeighbours opens the counter on interface ifindex of namespace n
// (the socket is opened on a thread inside it: a packet socket belongs to
// the namespace it is created in). Close it when done.
func CountNeighbours(n *ns.NS, ifindex int, ipv6 bool) (*Neighbours, error) {
	c := &Neighbours{}
	if err := c.open(n, ifindex, unix.ETH_P_ALL, controlFilter(false, ipv6)); err != nil {
		return nil, fmt.Errorf("neighbour frame counter in %s: %w", n.Name, err)
	}
	return c, nil
}

// open adds a packet socket on interface ifindex of namespace n (opened
// on a thread inside it) that counts the frames of proto filter keeps;
// on failure it closes every socket c has.
func (c *Neighbours) open(n *ns.NS, ifindex int, proto uint16, filter []unix.SockFilter) error {
	err := n.Do(func() error {
		fd, err := packetSocket(ifindex, proto, filter)
		if err != nil {
			return err
		}
		c.fds = append(c.fds, fd)
		return nil
	})
	if err != nil {
		c.Close()
	}
	return err
}

func packetSocket(ifindex int, proto uint16, filter []unix.SockFilter) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(proto)))
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	if filter != nil {
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("attach filter: %w", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind packet socket to ifindex %d: %w", ifindex, err)
	}
	return fd, nil
}

// Count returns the frames counted since the last Count (the first call:
// since the counters were opened). The kernel resets its statistics on
// every read.
func (c *Neighbours) Count() (uint64, error) {
	var total uint64
	for _, fd := range c.fds {
		var st unix.TpacketStats
		size := uint32(unsafe.Sizeof(st))
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
			uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			return 0, fmt.Errorf("PACKET_STATISTICS: %w", errno)
		}
		total += uint64(st.Packets) // includes the frames the socket dropped
	}
	return total, nil
}

// Close closes the counting sockets.
func (c *Neighbours) Close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
