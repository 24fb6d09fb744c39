package stall

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
)

// The BPF side: a raw tracepoint program on hrtimer_expire_entry(struct
// hrtimer *, ktime_t *now). It counts every expiry (per CPU), skips soft
// timers, and for a hard timer that ran more than the threshold after
// its hard expiry (hrtimer.node.expires) puts {ran, late, cpu} in a ring
// buffer. The offsets of the fields it reads come from the kernel's BTF,
// so they follow the running kernel. Written with cilium/ebpf's
// assembler: the program is a few instructions, and no C toolchain is
// needed to build nslab.

// program is the loaded program, its maps and its link.
type program struct {
	events, count *ebpf.Map
	prog          *ebpf.Program
	link          link.Link
}

// hrtimerLayout is where struct hrtimer keeps what the program reads.
type hrtimerLayout struct {
	expires  int32 // node.expires, ns
	soft     int32 // the byte of is_soft
	softMask int32 // its bit in that byte (0xff: a whole byte)
}

// layoutOnce reads the layout once per process: the kernel's BTF is
// megabytes, and every bench starts a watch.
var layoutOnce = sync.OnceValues(readLayout)

// layout is struct hrtimer's layout in the running kernel.
func layout() (hrtimerLayout, error) { return layoutOnce() }

// readLayout reads struct hrtimer from the kernel's BTF.
func readLayout() (hrtimerLayout, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return hrtimerLayout{}, fmt.Errorf("kernel BTF: %w", err)
	}
	var hr *btf.Struct
	if err := spec.TypeByName("hrtimer", &hr); err != nil {
		return hrtimerLayout{}, fmt.Errorf("struct hrtimer in the kernel's BTF: %w", err)
	}
	var l hrtimerLayout
	found := 0
	for _, m := range hr.Members {
		switch m.Name {
		case "node":
			tq, ok := btf.UnderlyingType(m.Type).(*btf.Struct)
			if !ok {
				return l, errors.New("struct hrtimer: node is not a struct")
			}
			for _, n := range tq.Members {
				if n.Name == "expires" {
					l.expires, found = int32(m.Offset.Bytes()+n.Offset.Bytes()), found+1
				}
			}
		case "is_soft":
			l.soft, l.softMask, found = int32(m.Offset/8), 0xff, found+1
			if m.BitfieldSize > 0 {
				l.softMask = int32(1) << (m.Offset % 8)
			}
		}
	}
	if found != 2 {
		return l, errors.New("struct hrtimer has no node.expires or is_soft in this kernel's BTF")
	}
	return l, nil
}

// load builds, loads and attaches the program for threshold.
func load(threshold time.Duration) (*program, error) {
	l, err := layout()
	if err != nil {
		return nil, err
	}
	p := &program{}
	if p.events, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 18}); err != nil {
		return nil, fmt.Errorf("ring buffer map: %w", err)
	}
	if p.count, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
		p.close()
		return nil, fmt.Errorf("counter map: %w", err)
	}
	p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: instructions(l, p, threshold.Nanoseconds())})
	if err != nil {
		p.close()
		return nil, fmt.Errorf("load the BPF program (raw tracepoints and bpf_probe_read_kernel are needed): %w", err)
	}
	if p.link, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "hrtimer_expire_entry", Program: p.prog}); err != nil {
		p.close()
		return nil, fmt.Errorf("attach to the hrtimer_expire_entry tracepoint: %w", err)
	}
	return p, nil
}

// instructions is the program. Registers: r6 the hrtimer, r7 the now
// pointer, r8 the lateness, r9 the time it ran.
func instructions(l hrtimerLayout, p *program, threshold int64) asm.Instructions {
	read := func(fpOff, size int16, from asm.Register, off int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, int32(fpOff)),
			asm.Mov.Imm(asm.R2, int32(size)),
			asm.Mov.Reg(asm.R3, from), asm.Add.Imm(asm.R3, off),
			asm.FnProbeReadKernel.Call(),
		}
	}
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord),
		asm.LoadMem(asm.R7, asm.R1, 8, asm.DWord),
		// count[0] += 1 (per CPU: no other writer)
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, p.count.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "counted"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0).WithSymbol("counted"),
		asm.StoreMem(asm.RFP, -24, asm.R1, asm.DWord),
	}
	insns = append(insns, read(-24, 1, asm.R6, l.soft)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, -24, asm.Byte),
		asm.And.Imm(asm.R1, l.softMask),
		asm.JNE.Imm(asm.R1, 0, "out"), // a soft timer
	)
	insns = append(insns, read(-8, 8, asm.R6, l.expires)...)
	insns = append(insns, read(-16, 8, asm.R7, 0)...)
	insns = append(insns,
		asm.LoadMem(asm.R8, asm.RFP, -16, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.DWord),
		asm.Sub.Reg(asm.R8, asm.R1),
		asm.JSLT.Imm(asm.R8, int32(min(threshold, 1<<31-1)), "out"),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.FnGetSmpProcessorId.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.LoadMapPtr(asm.R1, p.events.FD()),
		asm.Mov.Imm(asm.R2, 24),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"), // full: the event is lost, never a partial one
		asm.StoreMem(asm.R0, 0, asm.R9, asm.DWord),
		asm.StoreMem(asm.R0, 8, asm.R8, asm.DWord),
		asm.StoreMem(asm.R0, 16, asm.R6, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	return insns
}

// decode reads one event of the ring buffer.
func decode(b []byte) (event, bool) {
	if len(b) < 24 {
		return event{}, false
	}
	return event{ran: int64(binary.LittleEndian.Uint64(b)), late: int64(binary.LittleEndian.Uint64(b[8:])), cpu: int(binary.LittleEndian.Uint64(b[16:]))}, true
}

// seen is how many hrtimer expiries the program saw, on all CPUs.
func (p *program) seen() uint64 {
	var per []uint64
	if err := p.count.Lookup(uint32(0), &per); err != nil {
		return 0
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n
}

func (p *program) close() {
	// Closing only drops file descriptors: the kernel frees the program
	// with its last one, and an error here leaves nothing to undo.
	if p.link != nil {
		_ = p.link.Close()
	}
	if p.prog != nil {
		_ = p.prog.Close()
	}
	for _, m := range []*ebpf.Map{p.events, p.count} {
		if m != nil {
			_ = m.Close()
		}
	}
}
