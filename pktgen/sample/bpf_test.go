package sample

import (
	"testing"

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
