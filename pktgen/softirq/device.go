package softirq

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// Per-device attribution: the CPU time of each packet a device receives,
// charged to that device. The net:netif_receive_skb tracepoint fires as
// the stack takes each packet from a device (for a veth, from the CPU's
// backlog), and the time until the next packet on that CPU, or until the
// softirq ends, is the work that packet caused: a router's forwarding up
// to the egress device's transmit, or a host's delivery to its socket.
// Several nodes whose work shares a CPU (two labs measured at once) are
// told apart this way, where the CPU's softirq time holds them all.
//
// A device is named by its namespace's inode number and its ifindex
// (ifindexes repeat across namespaces). Only the devices registered with
// Watch are charged; the work of every other packet goes to Other.

// Dev names one device: the inode number of its network namespace and
// its ifindex there.
type Dev struct {
	NetNS   uint32
	Ifindex int32
}

func (d Dev) key() uint64 { return uint64(d.NetNS)<<32 | uint64(uint32(d.Ifindex)) }

// Other is where the packets of devices not watched are charged.
var Other = Dev{}

// DevTime is what a device's packets cost: the time charged to them and
// their count, summed over CPUs.
type DevTime struct {
	Ns, Packets uint64
}

// Devices is the loaded attribution: its programs and maps. Close
// detaches them.
type Devices struct {
	state, acc *ebpf.Map
	progs      []*ebpf.Program
	links      []link.Link
}

// OpenDevices loads and attaches the attribution (BPF raw tracepoints,
// kernel reads and BTF; root).
func OpenDevices() (*Devices, error) {
	l, err := layoutOnce()
	if err != nil {
		return nil, fmt.Errorf("per-device softirq time: %w", err)
	}
	d := &Devices{}
	if d.state, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("per-device softirq time: state map: %w", err)
	}
	if d.acc, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: 8, ValueSize: 16, MaxEntries: 4096}); err != nil {
		_ = d.Close() // the error to report is the one above
		return nil, fmt.Errorf("per-device softirq time: accounting map: %w", err)
	}
	if err := d.Watch(Other); err != nil {
		_ = d.Close() // the error to report is the one above
		return nil, err
	}
	for _, a := range []struct {
		tp    string
		insns asm.Instructions
	}{
		{"softirq_entry", d.entry()},
		{"netif_receive_skb", d.receive(l)},
		{"softirq_exit", d.exit()},
	} {
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: a.insns})
		if err != nil {
			_ = d.Close() // the error to report is the one above
			return nil, fmt.Errorf("per-device softirq time: load the %s program: %w", a.tp, err)
		}
		d.progs = append(d.progs, p)
		ln, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: a.tp, Program: p})
		if err != nil {
			_ = d.Close() // the error to report is the one above
			return nil, fmt.Errorf("per-device softirq time: attach to the %s tracepoint: %w", a.tp, err)
		}
		d.links = append(d.links, ln)
	}
	return d, nil
}

// Watch starts charging dev's packets to it (from zero).
func (d *Devices) Watch(dev Dev) error {
	zero := make([][16]byte, ebpf.MustPossibleCPU())
	if err := d.acc.Update(dev.key(), zero, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("per-device softirq time: watch %+v: %w", dev, err)
	}
	return nil
}

// Read is what dev's packets cost since it was watched, on the CPUs
// given (all when none).
func (d *Devices) Read(dev Dev, cpus ...int) (DevTime, error) {
	per, err := d.ReadPerCPU(dev)
	if err != nil {
		return DevTime{}, err
	}
	var t DevTime
	for cpu, v := range per {
		if len(cpus) == 0 || slices.Contains(cpus, cpu) {
			t = t.Add(v)
		}
	}
	return t, nil
}

// ReadPerCPU is what dev's packets cost since it was watched, on each
// CPU (indexed by CPU number).
func (d *Devices) ReadPerCPU(dev Dev) ([]DevTime, error) {
	var per [][2]uint64
	if err := d.acc.Lookup(dev.key(), &per); err != nil {
		return nil, fmt.Errorf("per-device softirq time: read %+v: %w", dev, err)
	}
	out := make([]DevTime, len(per))
	for cpu, v := range per {
		out[cpu] = DevTime{Ns: v[0], Packets: v[1]}
	}
	return out, nil
}

// Add is t and u together.
func (t DevTime) Add(u DevTime) DevTime { return DevTime{t.Ns + u.Ns, t.Packets + u.Packets} }

// Sub is what was added to u to make t (t read after u).
func (t DevTime) Sub(u DevTime) DevTime { return DevTime{t.Ns - u.Ns, t.Packets - u.Packets} }

// The programs. The per-CPU state is {key of the packet being worked on
// (0: none), the time its work began}; charge adds the time since then
// to the packet's device (or to Other) and sets the state to the key in
// r8 and the time in r9.

// stateInto puts the CPU's state's address in r6 (or ends the program).
func (d *Devices) stateInto() asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, d.state.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R6, asm.R0),
	}
}

// charge closes the packet in the state (r6) at time r9, and opens the
// one whose key is in r8 (0: none).
func (d *Devices) charge() asm.Instructions {
	lookup := asm.Instructions{
		asm.LoadMapPtr(asm.R1, d.acc.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -16),
		asm.FnMapLookupElem.Call(),
	}
	insns := asm.Instructions{
		asm.LoadMem(asm.R1, asm.R6, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "set"),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
	}
	insns = append(insns, lookup...)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, "add"),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord), // a device not watched: Other
	)
	insns = append(insns, lookup...)
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, "set"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord).WithSymbol("add"),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.LoadMem(asm.R3, asm.R6, 8, asm.DWord),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord),
		asm.StoreMem(asm.R6, 0, asm.R8, asm.DWord).WithSymbol("set"),
		asm.StoreMem(asm.R6, 8, asm.R9, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	return insns
}

// entry forgets a packet left open outside a softirq (received in
// process context): its time until now is not its work.
func (d *Devices) entry() asm.Instructions {
	insns := d.stateInto()
	return append(insns,
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R6, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// exit closes the packet being worked on when a softirq ends.
func (d *Devices) exit() asm.Instructions {
	insns := asm.Instructions{
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.Mov.Imm(asm.R8, 0),
	}
	insns = append(insns, d.stateInto()...)
	return append(insns, d.charge()...)
}

// receive closes the packet being worked on and opens skb's (args[0]),
// keyed by its device's namespace inode and ifindex.
func (d *Devices) receive(l devLayout) asm.Instructions {
	read := func(fpOff, size int16, from asm.Register, off int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, int32(fpOff)),
			asm.Mov.Imm(asm.R2, int32(size)),
			asm.Mov.Reg(asm.R3, from), asm.Add.Imm(asm.R3, off),
			asm.FnProbeReadKernel.Call(),
		}
	}
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.DWord), // skb
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -24, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, -32, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, -40, asm.R1, asm.DWord),
	}
	insns = append(insns, read(-24, 8, asm.R7, l.skbDev)...)
	insns = append(insns, asm.LoadMem(asm.R7, asm.RFP, -24, asm.DWord)) // dev
	insns = append(insns, asm.JEq.Imm(asm.R7, 0, "out"))
	insns = append(insns, read(-32, 4, asm.R7, l.ifindex)...)
	insns = append(insns, read(-24, 8, asm.R7, l.ndNet)...)
	insns = append(insns, asm.LoadMem(asm.R7, asm.RFP, -24, asm.DWord)) // net
	insns = append(insns, asm.JEq.Imm(asm.R7, 0, "out"))
	insns = append(insns, read(-40, 4, asm.R7, l.inum)...)
	insns = append(insns,
		asm.LoadMem(asm.R8, asm.RFP, -40, asm.Word),
		asm.LSh.Imm(asm.R8, 32),
		asm.LoadMem(asm.R1, asm.RFP, -32, asm.Word),
		asm.Or.Reg(asm.R8, asm.R1), // key
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	insns = append(insns, d.stateInto()...)
	return append(insns, d.charge()...)
}

// Close detaches the programs and frees the maps; it can be called
// again.
func (d *Devices) Close() error {
	var errs []error
	for _, l := range d.links {
		errs = append(errs, l.Close())
	}
	for _, p := range d.progs {
		errs = append(errs, p.Close())
	}
	for _, m := range []*ebpf.Map{d.state, d.acc} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	d.links, d.progs, d.state, d.acc = nil, nil, nil, nil
	return errors.Join(errs...)
}
