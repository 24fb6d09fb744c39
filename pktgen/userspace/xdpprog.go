package userspace

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The XDP return code the generator's program ends with: transmit on the
// device the run names as ingress (in live-frame mode, its ndo_xdp_xmit).
const xdpTX = 3

// bpf_ktime_get_tai_ns: CLOCK_TAI in nanoseconds (Linux 6.1).
const fnKtimeGetTAINs = asm.BuiltinFunc(208)

// stampLayout is where the program writes into the frame: the offsets of
// the UDP checksum and of pktgen's header, and whether the frame has room
// for the stamp's nanoseconds after that header.
type stampLayout struct {
	csum, pg int
	ns       bool
	frameLen int
	// head is the template's Ethernet and IP headers, which the program
	// writes back into every frame: a frame's page is recycled with what
	// the path wrote into it in place (an XDP router that forwarded it
	// without a copy rewrote its MACs and its TTL), so a run would
	// otherwise send frames whose TTL falls by one a round.
	head []byte
}

// words is how many 16-bit words of the payload header the program
// rewrites: sequence number and timestamp, and the nanoseconds when there
// is room for them.
func (l stampLayout) words() int {
	if l.ns {
		return 7
	}
	return 6
}

// liveProgram is the XDP program that sends one frame of a live-frame run:
// it counts the frame in slot of counts, writes its sequence number
// (first + the count before it) and its timestamp (CLOCK_TAI less taiOffset
// nanoseconds, the wall clock the AF_PACKET engine stamps) into pktgen's
// header, corrects the UDP checksum incrementally (RFC 1624, in the
// frame's byte order: the one's complement sum does not depend on it), and
// returns XDP_TX. A frame is recycled with what the last run wrote, so the
// correction always starts from a consistent checksum.
func liveProgram(counts *ebpf.Map, slot uint32, first uint32, taiOffset int64, l stampLayout) asm.Instructions {
	seqAt, secAt, usecAt, nsAt := int16(l.pg+4), int16(l.pg+8), int16(l.pg+12), int16(l.pg+16)
	insns := asm.Instructions{
		// r6 = data, r7 = data_end; a frame shorter than the template is
		// not one of ours.
		asm.LoadMem(asm.R6, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R7, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R6),
		asm.Add.Imm(asm.R2, int32(l.frameLen)),
		asm.JGT.Reg(asm.R2, asm.R7, "drop"),
	}
	insns = append(insns, restoreHead(l.head)...)
	insns = append(insns,
		// r8 = this slot's count; count this frame.
		asm.Mov.Imm(asm.R2, int32(slot)),
		asm.StoreMem(asm.RFP, -4, asm.R2, asm.Word),
		asm.LoadMapPtr(asm.R1, counts.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R8, asm.R0, 0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		// r9 = ~checksum + the complement of every word rewritten.
		asm.LoadMem(asm.R9, asm.R6, int16(l.csum), asm.Half),
		asm.Xor.Imm(asm.R9, 0xffff),
	)
	sumWords := func(complement bool) {
		for i := 0; i < l.words(); i++ {
			insns = append(insns, asm.LoadMem(asm.R1, asm.R6, seqAt+int16(2*i), asm.Half))
			if complement {
				insns = append(insns, asm.Xor.Imm(asm.R1, 0xffff))
			}
			insns = append(insns, asm.Add.Reg(asm.R9, asm.R1))
		}
	}
	sumWords(true)
	insns = append(insns,
		// r7 = the wall clock in nanoseconds.
		fnKtimeGetTAINs.Call(),
		asm.LoadImm(asm.R1, taiOffset, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R1),
		asm.Mov.Reg(asm.R7, asm.R0),
		// sequence number
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Add.Imm(asm.R1, int32(first)),
		asm.HostTo(asm.BE, asm.R1, asm.Word),
		asm.StoreMem(asm.R6, seqAt, asm.R1, asm.Word),
		// seconds
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Div.Imm(asm.R1, 1e9),
		asm.HostTo(asm.BE, asm.R1, asm.Word),
		asm.StoreMem(asm.R6, secAt, asm.R1, asm.Word),
		// microseconds
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Mod.Imm(asm.R1, 1e9),
		asm.Div.Imm(asm.R1, 1e3),
		asm.HostTo(asm.BE, asm.R1, asm.Word),
		asm.StoreMem(asm.R6, usecAt, asm.R1, asm.Word),
	)
	if l.ns {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Mod.Imm(asm.R1, 1e3),
			asm.HostTo(asm.BE, asm.R1, asm.Half),
			asm.StoreMem(asm.R6, nsAt, asm.R1, asm.Half),
		)
	}
	sumWords(false)
	insns = append(insns,
		// fold twice, complement; 0 is "no checksum" in UDP: send 0xffff.
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.RSh.Imm(asm.R1, 16),
		asm.And.Imm(asm.R9, 0xffff),
		asm.Add.Reg(asm.R9, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.RSh.Imm(asm.R1, 16),
		asm.And.Imm(asm.R9, 0xffff),
		asm.Add.Reg(asm.R9, asm.R1),
		asm.Xor.Imm(asm.R9, 0xffff),
		asm.JNE.Imm(asm.R9, 0, "store"),
		asm.Mov.Imm(asm.R9, 0xffff),
		asm.StoreMem(asm.R6, int16(l.csum), asm.R9, asm.Half).WithSymbol("store"),
		asm.Mov.Imm(asm.R0, xdpTX),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("drop"), // XDP_DROP
		asm.Return(),
	)
	return insns
}

// restoreHead stores head at the frame's start (r6), four bytes at a
// time, then two: the stores' immediates are in the host's byte order,
// as the frame's bytes are in memory.
func restoreHead(head []byte) asm.Instructions {
	var out asm.Instructions
	i := 0
	for ; i+4 <= len(head); i += 4 {
		out = append(out, asm.StoreImm(asm.R6, int16(i), int64(int32(binary.NativeEndian.Uint32(head[i:]))), asm.Word))
	}
	if i+2 <= len(head) {
		out = append(out, asm.StoreImm(asm.R6, int16(i), int64(binary.NativeEndian.Uint16(head[i:])), asm.Half))
		i += 2
	}
	if i < len(head) {
		out = append(out, asm.StoreImm(asm.R6, int16(i), int64(head[i]), asm.Byte))
	}
	return out
}

// loadLive loads thread slot's program.
func loadLive(counts *ebpf.Map, slot uint32, first uint32, taiOffset int64, l stampLayout) (*ebpf.Program, error) {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "nslab_live", Type: ebpf.XDP, License: "GPL",
		Instructions: liveProgram(counts, slot, first, taiOffset, l)})
	if err != nil {
		if refused := refusal(err); refused != nil {
			return nil, refused
		}
		return nil, fmt.Errorf("load the XDP generator: %w", err)
	}
	return p, nil
}
