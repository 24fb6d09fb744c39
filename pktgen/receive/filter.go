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
// IPv6 extension headers (nslab's engines send none). With every > 1 (a
// power of two) it passes only the packets whose sequence number is a
// multiple of it: the kernel drops the others in the filter, and the ring
// and the reader see one packet in every.
func filter(port uint16, ipv6 bool, every uint32) []bpf.Instruction {
	pg := uint32(14 + 40 + 8) // pktgen's header, IPv6
	var prog []bpf.Instruction
	load := func(off, size int) bpf.Instruction { return bpf.LoadAbsolute{Off: uint32(off), Size: size} }
	if ipv6 {
		prog = []bpf.Instruction{
			load(12, 2), // EtherType
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IPV6, SkipTrue: drop},
			load(14+6, 1), // next header
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP, SkipTrue: drop},
		}
	} else {
		pg = 14 + 8 // after X, the IPv4 header's length
		prog = []bpf.Instruction{
			load(12, 2), // EtherType
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IP, SkipTrue: drop},
			load(14+9, 1), // protocol
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP, SkipTrue: drop},
			load(14+6, 2), // flags, fragment offset
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x3fff, SkipTrue: drop}, // a fragment: MF or an offset
			bpf.LoadMemShift{Off: 14},                                      // X = the IPv4 header's length
		}
	}
	at := func(off uint32, size int) bpf.Instruction {
		if ipv6 {
			return bpf.LoadAbsolute{Off: off, Size: size}
		}
		return bpf.LoadIndirect{Off: off, Size: size}
	}
	prog = append(prog,
		at(pg-8+2, 2), // UDP destination port
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(port), SkipTrue: drop},
		at(pg, 4), // pktgen magic
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: Magic, SkipTrue: drop},
	)
	if every > 1 {
		prog = append(prog,
			at(pg+4, 4), // sequence number
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: every - 1},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0, SkipTrue: drop},
		)
	}
	prog = append(prog, bpf.RetConstant{Val: snapBytes}, bpf.RetConstant{Val: 0})
	return resolveDrops(prog)
}

// drop marks a jump to the program's last instruction (drop the packet),
// resolved by resolveDrops once the program is whole.
const drop = 0xff

// resolveDrops turns each jump marked drop into the count of
// instructions to the last one.
func resolveDrops(prog []bpf.Instruction) []bpf.Instruction {
	last := len(prog) - 1
	for i, in := range prog {
		if j, ok := in.(bpf.JumpIf); ok && j.SkipTrue == drop {
			j.SkipTrue = uint8(last - i - 1)
			prog[i] = j
		}
	}
	return prog
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
