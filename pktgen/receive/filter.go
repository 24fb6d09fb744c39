package receive

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The kernel filter of the reader's socket: only UDP packets to the run's
// destination port that carry pktgen's magic where its header starts
// reach the ring, so the reader pays for no other packet. Written with
// golang.org/x/net/bpf, whose virtual machine also runs it in the tests,
// without root.

// Magic is pktgen's payload magic number (struct pktgen_hdr).
const Magic = 0xbe9be955

// snapBytes is what the ring keeps of each packet: the headers, pktgen's
// header and the userspace engine's nanoseconds after it.
const snapBytes = 128

// filter is the program for UDP port port, over IPv4 or IPv6: no
// fragments, no IPv4 options assumed (the header length is read), no
// IPv6 extension headers (nslab's engines send none).
func filter(port uint16, ipv6 bool) []bpf.Instruction {
	if ipv6 {
		return []bpf.Instruction{
			bpf.LoadAbsolute{Off: 12, Size: 2}, // EtherType
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IPV6, SkipTrue: 6},
			bpf.LoadAbsolute{Off: 14 + 6, Size: 1}, // next header
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP, SkipTrue: 4},
			bpf.LoadAbsolute{Off: 14 + 40 + 2, Size: 2}, // UDP destination port
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(port), SkipTrue: 2},
			bpf.LoadAbsolute{Off: 14 + 40 + 8, Size: 4}, // pktgen magic
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: Magic, SkipTrue: 1},
			bpf.RetConstant{Val: 0},
			bpf.RetConstant{Val: snapBytes},
		}
	}
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: 12, Size: 2}, // EtherType
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IP, SkipTrue: 9},
		bpf.LoadAbsolute{Off: 14 + 9, Size: 1}, // protocol
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP, SkipTrue: 7},
		bpf.LoadAbsolute{Off: 14 + 6, Size: 2},                      // flags, fragment offset
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x3fff, SkipTrue: 5}, // a fragment: MF or an offset
		bpf.LoadMemShift{Off: 14},                                   // X = the IPv4 header's length
		bpf.LoadIndirect{Off: 14 + 2, Size: 2},                      // UDP destination port
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(port), SkipTrue: 2},
		bpf.LoadIndirect{Off: 14 + 8, Size: 4}, // pktgen magic
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: Magic, SkipTrue: 1},
		bpf.RetConstant{Val: 0},
		bpf.RetConstant{Val: snapBytes},
	}
}

// attachFilter sets the program on socket fd.
//
// Equivalent to: setsockopt(SO_ATTACH_FILTER)
func attachFilter(fd int, prog []bpf.Instruction) error {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("assemble the receive filter: %w", err)
	}
	ins := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		ins[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fp := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		return fmt.Errorf("attach the receive filter: %w", err)
	}
	return nil
}
