package sample

import (
	"fmt"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// CountSentControl opens a counter of the control frames (ARP, and IP
// frames that are not a run's; for an IPv4 run, any IPv6 frame) that interface ifindex of
// namespace n sends. Its peer is on another host (a VXLAN link), where no
// counter of what it receives can be read: the frames are counted on
// their way out instead, by one packet socket that sees every frame the
// interface sends and a kernel filter that keeps only the outgoing control
// frames, so the run's packets are never copied. Count and Close as
// Neighbours.
func CountSentControl(n *ns.NS, ifindex int, ipv6 bool) (*Neighbours, error) {
	c := &Neighbours{}
	err := n.Do(func() error {
		fd, err := packetSocket(ifindex, unix.ETH_P_ALL, sentControlFilter(ipv6))
		if err != nil {
			return err
		}
		c.fds = append(c.fds, fd)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sent control frame counter in %s: %w", n.Name, err)
	}
	return c, nil
}

// sentControlFilter keeps the outgoing frames that are not a run's (see
// controlFilter).
func sentControlFilter(ipv6 bool) []unix.SockFilter { return controlFilter(true, ipv6) }

// controlFilter keeps the frames of one direction (outgoing, or every
// other) that are not a run's: a run's frame is UDP of the run's IP version
// whose payload starts with pktgen's magic (nslab's engines and kernel
// pktgen send no other), or TCP from or to spec.TCPPort (a TCP run's
// flows: data one way, ACKs the other); everything else is control (ARP,
// ND, MLD, IGMP, ICMP, routing daemons' OSPF, BGP and RIP (UDP 520), a
// bridge's STP). It reads the frame from its Ethernet header, for
// ETH_P_ALL sockets, which also see the frames of a bridge port (a socket
// bound to one protocol does not: the bridge takes them first). It reads
// the ports after a 20-byte IPv4 header, as the engines and the kernel's
// TCP send them.
func controlFilter(outgoing, ipv6 bool) []unix.SockFilter {
	dir := bpfIns{code: jeq, k: unix.PACKET_OUTGOING, jt: "drop"}
	if outgoing {
		dir = bpfIns{code: jeq, k: unix.PACKET_OUTGOING, jf: "drop"}
	}
	prog := []bpfIns{
		{code: ldw, k: skfAD + skfPktType},
		dir,
		{code: ldh, k: 12}, // ethertype
		{code: jeq, k: unix.ETH_P_IP, jf: "ipv6"},
	}
	if ipv6 {
		prog = append(prog, bpfIns{code: ret, k: 0xffff}) // not an IPv6 run's
	} else {
		prog = append(prog,
			bpfIns{code: ldb, k: 23},
			bpfIns{code: jeq, k: unix.IPPROTO_TCP, jt: "tcp4"},
			bpfIns{code: jeq, k: unix.IPPROTO_UDP, jf: "keep"},
			bpfIns{code: ldw, k: 14 + 20 + 8}, // the payload, after a 20-byte header (the engines')
			bpfIns{code: jeq, k: pktgenMagic, jt: "drop", jf: "keep"})
		prog = append(prog, tcpPorts("tcp4", 14+20)...)
	}
	prog = append(prog, bpfIns{label: "ipv6", code: jeq, k: unix.ETH_P_IPV6, jf: "keep"})
	if ipv6 { // a run's packets are UDP, after a hop-by-hop header too
		prog = append(prog,
			bpfIns{code: ldb, k: 20},
			bpfIns{code: jeq, k: unix.IPPROTO_TCP, jt: "tcp6"},
			bpfIns{code: jeq, k: unix.IPPROTO_UDP, jt: "udp6"},
			bpfIns{code: jeq, k: unix.IPPROTO_HOPOPTS, jf: "keep"},
			bpfIns{code: ldb, k: 54},
			bpfIns{code: jeq, k: unix.IPPROTO_UDP, jf: "keep"},
			bpfIns{code: ldw, k: 14 + 40 + 8 + 8},
			bpfIns{code: jeq, k: pktgenMagic, jt: "drop", jf: "keep"},
			bpfIns{label: "udp6", code: ldw, k: 14 + 40 + 8},
			bpfIns{code: jeq, k: pktgenMagic, jt: "drop", jf: "keep"},
		)
		prog = append(prog, tcpPorts("tcp6", 14+40)...)
	} else {
		prog = append(prog, bpfIns{code: ret, k: 0xffff}) // not an IPv4 run's
	}
	return assemble(append(prog, keepOrDrop(0xffff)...))
}

// tcpPorts, at label, drops a TCP segment whose header starts at offset
// l4 when its source or destination port is a TCP run's, and keeps it
// otherwise.
func tcpPorts(label string, l4 uint32) []bpfIns {
	return []bpfIns{
		{label: label, code: ldh, k: l4},
		{code: jeq, k: spec.TCPPort, jt: "drop"},
		{code: ldh, k: l4 + 2},
		{code: jeq, k: spec.TCPPort, jt: "drop", jf: "keep"},
	}
}

// pktgenMagic starts the payload of every run's packet (struct
// pktgen_hdr's pgh_magic).
const pktgenMagic = 0xbe9be955
