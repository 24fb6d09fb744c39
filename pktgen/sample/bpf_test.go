package sample

import (
	"encoding/binary"
	"testing"

	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestAssemble: labels become the relative jumps classic BPF counts from
// the next instruction, and a jump nowhere or backwards is refused.
func TestAssemble(t *testing.T) {
	got := assemble(append([]bpfIns{
		{code: ldb, k: 23},
		{code: jeq, k: 17, jt: "keep", jf: "drop"},
		{code: jeq, k: 6, jf: "drop"},
	}, keepOrDrop(64)...))
	want := []unix.SockFilter{
		{Code: ldb, K: 23},
		{Code: jeq, K: 17, Jt: 1, Jf: 2},
		{Code: jeq, K: 6, Jt: 0, Jf: 1},
		{Code: ret, K: 64},
		{Code: ret, K: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%d instructions, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("instruction %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for name, prog := range map[string][]bpfIns{
		"missing":  {{code: jeq, jf: "nowhere"}, {code: ret}},
		"backward": {{label: "top", code: ldb}, {code: jeq, jt: "top"}, {code: ret}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s label: assembled", name)
				}
			}()
			assemble(prog)
		}()
	}
}

// TestFiltersStayInside: every counting filter ends by dropping, and no
// jump leaves it (the kernel would refuse the filter at attach time).
func TestFiltersStayInside(t *testing.T) {
	for name, f := range map[string][]unix.SockFilter{
		"received4": controlFilter(false, false), "received6": controlFilter(false, true), "udp4": udp4Filter(9), "udp6": udp6Filter(9),
		"sent4": sentControlFilter(false), "sent6": sentControlFilter(true),
	} {
		last := f[len(f)-1]
		if last.Code != ret || last.K != 0 {
			t.Errorf("%s: ends with %+v, not a drop", name, last)
		}
		for i, in := range f {
			if in.Code&0x07 != unix.BPF_JMP {
				continue
			}
			for _, off := range []uint8{in.Jt, in.Jf} {
				if to := i + 1 + int(off); to >= len(f) {
					t.Errorf("%s: instruction %d jumps past the end", name, i)
				}
			}
		}
	}
}

// TestControlFilterFrames runs the received-frame filters (past their
// first two instructions, the direction read from the kernel's ancillary
// data, which x/net/bpf's VM cannot read) on frames of each kind: a
// run's UDP frame and a TCP run's segments, either way, are not control;
// ARP, UDP without the magic (RIP), TCP of another port (BGP) and the
// other IP version are.
func TestControlFilterFrames(t *testing.T) {
	eth := func(typ uint16) []byte { return binary.BigEndian.AppendUint16(make([]byte, 12), typ) }
	ports := func(src, dst uint16) []byte {
		return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, src), dst)
	}
	v4 := func(proto byte, l4 []byte) []byte {
		ip := make([]byte, 20)
		ip[0], ip[9] = 0x45, proto
		return append(append(eth(unix.ETH_P_IP), ip...), l4...)
	}
	v6 := func(proto byte, l4 []byte) []byte {
		ip := make([]byte, 40)
		ip[0], ip[6] = 0x60, proto
		return append(append(eth(unix.ETH_P_IPV6), ip...), l4...)
	}
	magic := binary.BigEndian.AppendUint32(make([]byte, 8), pktgenMagic)
	tcp := func(src, dst uint16) []byte { return append(ports(src, dst), make([]byte, 16)...) }
	for _, c := range []struct {
		name    string
		ipv6    bool
		frame   []byte
		control bool
	}{
		{"a run's UDP", false, v4(unix.IPPROTO_UDP, magic), false},
		{"a TCP run's data", false, v4(unix.IPPROTO_TCP, tcp(40156, spec.TCPPort)), false},
		{"a TCP run's ACK", false, v4(unix.IPPROTO_TCP, tcp(spec.TCPPort, 40156)), false},
		{"BGP", false, v4(unix.IPPROTO_TCP, tcp(179, 40156)), true},
		{"RIP", false, v4(unix.IPPROTO_UDP, append(ports(520, 520), make([]byte, 8)...)), true},
		{"ARP", false, append(eth(unix.ETH_P_ARP), make([]byte, 28)...), true},
		{"IPv6 in an IPv4 run", false, v6(unix.IPPROTO_TCP, tcp(40156, spec.TCPPort)), true},
		{"a run's UDP over IPv6", true, v6(unix.IPPROTO_UDP, magic), false},
		{"a TCP run's data over IPv6", true, v6(unix.IPPROTO_TCP, tcp(40156, spec.TCPPort)), false},
		{"a TCP run's ACK over IPv6", true, v6(unix.IPPROTO_TCP, tcp(spec.TCPPort, 40156)), false},
		{"BGP over IPv6", true, v6(unix.IPPROTO_TCP, tcp(40156, 179)), true},
		{"IPv4 in an IPv6 run", true, v4(unix.IPPROTO_UDP, magic), true},
	} {
		var prog []bpf.Instruction
		for _, in := range controlFilter(false, c.ipv6)[2:] {
			prog = append(prog, bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble())
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		n, err := vm.Run(c.frame)
		if err != nil || (n > 0) != c.control {
			t.Errorf("%s: kept %d bytes (%v), want control %v", c.name, n, err, c.control)
		}
	}
}
