package sample

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Classic BPF for the counting sockets' kernel filters, written with
// labels instead of counted jumps.
const (
	ldw    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS  // A = 32 bits at k
	ldh    = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS  // A = 16 bits at k
	ldb    = unix.BPF_LD | unix.BPF_B | unix.BPF_ABS  // A = byte at k
	ldhx   = unix.BPF_LD | unix.BPF_H | unix.BPF_IND  // A = 16 bits at X+k
	ldxmsh = unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH // X = 4*(byte at k & 0xf): an IPv4 header's length
	jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret    = unix.BPF_RET | unix.BPF_K // accept k bytes (0: drop)

	skfAD      = 0xfffff000 // SKF_AD_OFF: ancillary data instead of packet bytes
	skfPktType = 4          // SKF_AD_PKTTYPE: the packet's PACKET_* type
)

// bpfIns is one instruction of a filter, jumping to labels.
type bpfIns struct {
	label  string // this instruction's label, if any
	code   uint16
	k      uint32
	jt, jf string // labels; "" is the next instruction
}

// assemble resolves the labels of a filter into relative jumps. A label
// that is missing, or not after the jump (classic BPF only jumps
// forward), is a mistake in the program: it panics.
func assemble(prog []bpfIns) []unix.SockFilter {
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	rel := func(i int, label string) uint8 {
		if label == "" {
			return 0
		}
		to, ok := at[label]
		if !ok || to <= i || to-i-1 > 255 {
			panic(fmt.Sprintf("bpf: instruction %d jumps to %q, which is not within 256 instructions after it", i, label))
		}
		return uint8(to - i - 1)
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		out[i] = unix.SockFilter{Code: in.code, K: in.k, Jt: rel(i, in.jt), Jf: rel(i, in.jf)}
	}
	return out
}

// keepOrDrop ends a filter: "keep" accepts up to keep bytes, "drop" none.
func keepOrDrop(keep uint32) []bpfIns {
	return []bpfIns{{label: "keep", code: ret, k: keep}, {label: "drop", code: ret, k: 0}}
}
