// Package softirq counts the exact time each CPU spends in softirqs, per
// softirq kind, from BPF programs on the irq:softirq_entry and
// irq:softirq_exit tracepoints. A router's forwarding work on Linux is
// NET_RX (and NET_TX) softirq time, and on a kernel built without
// CONFIG_IRQ_TIME_ACCOUNTING /proc/stat charges softirq time by sampling
// at the tick (a few dozen ticks a second at low load), which is far too
// coarse to divide by a packet count. The tracepoints fire around every
// softirq run, inline after an interrupt and in ksoftirqd alike, so the
// sum covers both.
//
// Machine-wide: the tracepoints are the kernel's, not a namespace's; a
// Counter is opened and read from any thread of any namespace.
package softirq

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// Softirq kinds (include/linux/interrupt.h), by vector number.
const (
	NetTX = 2
	NetRX = 3
	kinds = 10 // NR_SOFTIRQS
)

// The map's slots, per CPU: the time of kind k in slot k, the entry
// count of kind k in slot kinds+k, and the start of the softirq running
// now in slot startSlot.
const (
	startSlot = 2 * kinds
	slots     = startSlot + 1
)

// Counter is the loaded programs and their per-CPU map. Close detaches
// them.
type Counter struct {
	times       *ebpf.Map
	entry, exit *ebpf.Program
	links       []link.Link
}

// Open loads and attaches the programs. It needs BPF with raw
// tracepoints (root); it says what failed.
func Open() (*Counter, error) {
	c := &Counter{}
	var err error
	if c.times, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: slots}); err != nil {
		return nil, fmt.Errorf("softirq time: per-CPU map: %w", err)
	}
	if c.entry, err = ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: entryProgram(c.times)}); err != nil {
		_ = c.Close() // the error to report is the one above
		return nil, fmt.Errorf("softirq time: load the entry program: %w", err)
	}
	if c.exit, err = ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: exitProgram(c.times)}); err != nil {
		_ = c.Close() // the error to report is the one above
		return nil, fmt.Errorf("softirq time: load the exit program: %w", err)
	}
	for name, p := range map[string]*ebpf.Program{"softirq_entry": c.entry, "softirq_exit": c.exit} {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: p})
		if err != nil {
			_ = c.Close() // the error to report is the one above
			return nil, fmt.Errorf("softirq time: attach to the %s tracepoint: %w", name, err)
		}
		c.links = append(c.links, l)
	}
	return c, nil
}

// slot puts the address of m's slot whose number is in register key in
// r0, or ends the program (at its "out" label).
func slot(m *ebpf.Map, key asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.StoreMem(asm.RFP, -4, key, asm.Word),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
	}
}

// entryProgram stores the time a softirq starts in the CPU's start slot.
func entryProgram(m *ebpf.Map) asm.Instructions {
	insns := append(asm.Instructions{asm.Mov.Imm(asm.R1, startSlot)}, slot(m, asm.R1)...)
	return append(insns,
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R6, 0, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// exitProgram adds the time since the CPU's start slot to the slot of
// the softirq's kind (args[0], the vector), counts the run, and clears
// the start (an exit whose entry came before the programs were attached
// adds nothing). Registers: r6 the vector, r7 the start slot, r8 now.
func exitProgram(m *ebpf.Map) asm.Instructions {
	lookup := func(key asm.Register) asm.Instructions { return slot(m, key) }
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord),
		asm.JGE.Imm(asm.R6, kinds, "out"),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.Mov.Imm(asm.R1, startSlot),
	}
	insns = append(insns, lookup(asm.R1)...)
	insns = append(insns,
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "out"),
		asm.Mov.Imm(asm.R2, 0),
		asm.StoreMem(asm.R7, 0, asm.R2, asm.DWord),
		asm.Sub.Reg(asm.R8, asm.R1), // r8: this run's duration
		asm.Mov.Reg(asm.R1, asm.R6),
	)
	insns = append(insns, lookup(asm.R1)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R8),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Add.Imm(asm.R1, kinds),
	)
	insns = append(insns, lookup(asm.R1)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	return insns
}

// Reading is every CPU's softirq time and runs by kind, since the
// counter opened: Ns[cpu][kind] and Runs[cpu][kind].
type Reading struct {
	Ns, Runs [][kinds]uint64
}

// Read reads the counters.
func (c *Counter) Read() (Reading, error) {
	var r Reading
	for k := range 2 * kinds {
		var per []uint64
		if err := c.times.Lookup(uint32(k), &per); err != nil {
			return r, fmt.Errorf("softirq time: read slot %d: %w", k, err)
		}
		if r.Ns == nil {
			r.Ns, r.Runs = make([][kinds]uint64, len(per)), make([][kinds]uint64, len(per))
		}
		for cpu, v := range per {
			if k < kinds {
				r.Ns[cpu][k] = v
			} else {
				r.Runs[cpu][k-kinds] = v
			}
		}
	}
	return r, nil
}

// Since is the time (ns) and runs of the kinds given, on the CPUs given,
// between an earlier reading and r. A CPU the readings do not have is an
// error.
func (r Reading) Since(before Reading, cpus []int, kinds ...int) (ns, runs uint64, err error) {
	for _, cpu := range cpus {
		if cpu < 0 || cpu >= len(r.Ns) || cpu >= len(before.Ns) {
			return 0, 0, fmt.Errorf("softirq time: no cpu%d (the counter has %d)", cpu, len(r.Ns))
		}
		for _, k := range kinds {
			ns += r.Ns[cpu][k] - before.Ns[cpu][k]
			runs += r.Runs[cpu][k] - before.Runs[cpu][k]
		}
	}
	return ns, runs, nil
}

// Close detaches the programs and frees the map; it can be called again.
func (c *Counter) Close() error {
	var errs []error
	for _, l := range c.links {
		errs = append(errs, l.Close())
	}
	c.links = nil
	for _, p := range []*ebpf.Program{c.entry, c.exit} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	if c.times != nil {
		errs = append(errs, c.times.Close())
	}
	c.entry, c.exit, c.times = nil, nil, nil
	return errors.Join(errs...)
}
