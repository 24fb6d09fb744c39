package sample

import (
	"fmt"
	"unsafe"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// Neighbours counts the control frames an interface receives that are not
// a run's: ARP, and every IP frame that is not UDP (a run's packets are
// UDP): IGMP, ICMP, IPv6's own (neighbour discovery, and the MLD reports a
// node sends for its addresses in its first seconds; a bridge with an
// address sends IGMP reports too), and the routing daemons' (OSPF hellos
// and updates, BGP's TCP).
// They cross a lab's links during a run (a router re-probing its next hop
// once its entry went stale, a freshly deployed lab's multicast listener
// reports, a daemon's hello every second) without being the run's
// packets. The counting sockets are bound to those protocols only (ARP;
// IPv6 for an IPv4 run, IPv4 for an IPv6 run), or filtered in the kernel
// (not UDP, in the run's IP version), so the run's own packets never
// reach them.
type Neighbours struct {
	fds []int
}

// notUDP4Filter accepts IPv4 frames that do not carry UDP (protocol at
// byte 23): IGMP reports, ICMP, OSPF, BGP's TCP.
var notUDP4Filter = assemble(append([]bpfIns{
	{code: ldb, k: 23},
	{code: jeq, k: unix.IPPROTO_UDP, jt: "drop", jf: "keep"},
}, keepOrDrop(0xffff)...))

// notUDP6Filter accepts IPv6 frames that do not carry UDP (neighbour
// discovery, MLD, OSPFv3, BGP's TCP): next header at byte 20 of the
// frame; a hop-by-hop header (MLD reports carry one: next header 0) is
// followed to its next header at byte 54.
var notUDP6Filter = assemble(append([]bpfIns{
	{code: ldb, k: 20},
	{code: jeq, k: unix.IPPROTO_UDP, jt: "drop"},
	{code: jeq, k: unix.IPPROTO_HOPOPTS, jf: "keep"},
	{code: ldb, k: 54},
	{code: jeq, k: unix.IPPROTO_UDP, jt: "drop", jf: "keep"},
}, keepOrDrop(0xffff)...))

// CountNeighbours opens the counters on interface ifindex of namespace n
// (the sockets are opened on a thread inside it: a packet socket belongs
// to the namespace it is created in). Close it when done.
func CountNeighbours(n *ns.NS, ifindex int, ipv6 bool) (*Neighbours, error) {
	c := &Neighbours{}
	err := n.Do(func() error {
		fd, err := packetSocket(ifindex, unix.ETH_P_ARP, nil)
		if err != nil {
			return err
		}
		c.fds = append(c.fds, fd)
		filter4, filter6 := notUDP4Filter, []unix.SockFilter(nil) // no IPv6 frame is an IPv4 run's
		if ipv6 {
			filter4, filter6 = nil, notUDP6Filter
		}
		if fd, err = packetSocket(ifindex, unix.ETH_P_IP, filter4); err != nil {
			return err
		}
		c.fds = append(c.fds, fd)
		if fd, err = packetSocket(ifindex, unix.ETH_P_IPV6, filter6); err != nil {
			return err
		}
		c.fds = append(c.fds, fd)
		return nil
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("neighbour frame counter in %s: %w", n.Name, err)
	}
	return c, nil
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
