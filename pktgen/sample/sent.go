package sample

import (
	"fmt"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// CountSentControl opens a counter of the control frames (ARP, and IP
// frames that are not UDP; for an IPv4 run, any IPv6 frame) that interface ifindex of
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

// sentControlFilter keeps the outgoing frames that are control frames:
// ARP, and the IP frames of the run's version that are not UDP (every
// frame of the other version).
func sentControlFilter(ipv6 bool) []unix.SockFilter {
	prog := []bpfIns{
		{code: ldw, k: skfAD + skfPktType},
		{code: jeq, k: unix.PACKET_OUTGOING, jf: "drop"},
		{code: ldh, k: 12}, // ethertype
		{code: jeq, k: unix.ETH_P_ARP, jt: "keep"},
		{code: jeq, k: unix.ETH_P_IP, jf: "ipv6"},
	}
	if ipv6 {
		prog = append(prog, bpfIns{code: jeq, k: unix.ETH_P_IP, jt: "keep"}) // not an IPv6 run's
	} else {
		prog = append(prog,
			bpfIns{code: ldb, k: 23},
			bpfIns{code: jeq, k: unix.IPPROTO_UDP, jt: "drop", jf: "keep"})
	}
	prog = append(prog, bpfIns{label: "ipv6", code: jeq, k: unix.ETH_P_IPV6, jf: "drop"})
	if ipv6 { // an IPv6 run's packets are UDP, after a hop-by-hop header too
		prog = append(prog,
			bpfIns{code: ldb, k: 20},
			bpfIns{code: jeq, k: unix.IPPROTO_UDP, jt: "drop"},
			bpfIns{code: jeq, k: unix.IPPROTO_HOPOPTS, jf: "keep"},
			bpfIns{code: ldb, k: 54},
			bpfIns{code: jeq, k: unix.IPPROTO_UDP, jt: "drop", jf: "keep"},
		)
	}
	return assemble(append(prog, keepOrDrop(0xffff)...))
}
