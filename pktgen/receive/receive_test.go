package receive

import (
	"encoding/binary"
	"reflect"
	"testing"

	"golang.org/x/net/bpf"
)

// frame builds an Ethernet frame of size bytes (no FCS) carrying a UDP
// packet to dstPort with pktgen's header (magic, seq, sec, usec) and,
// when nsec >= 0, the nanoseconds after it.
func frame(ipv6 bool, dstPort uint16, magic, seq, sec, usec uint32, nsec int, size int) []byte {
	be := binary.BigEndian
	b := make([]byte, size)
	var udp []byte
	if ipv6 {
		be.PutUint16(b[12:], 0x86dd)
		b[14], b[14+6] = 0x60, 17
		udp = b[14+40:]
	} else {
		be.PutUint16(b[12:], 0x0800)
		b[14], b[14+9] = 0x45, 17
		udp = b[14+20:]
	}
	be.PutUint16(udp[0:], 9)
	be.PutUint16(udp[2:], dstPort)
	pg := udp[8:]
	be.PutUint32(pg[0:], magic)
	be.PutUint32(pg[4:], seq)
	be.PutUint32(pg[8:], sec)
	be.PutUint32(pg[12:], usec)
	if nsec >= 0 && len(pg) >= 18 {
		be.PutUint16(pg[16:], uint16(nsec))
	}
	return b
}

// TestFilter runs the kernel filter in x/net/bpf's virtual machine: the
// run's packets pass, with their headers kept; others do not.
func TestFilter(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		vm, err := bpf.NewVM(filter(9000, v6, 0))
		if err != nil {
			t.Fatal(err)
		}
		size := 60
		if v6 {
			size = 78
		}
		pass := func(b []byte) int {
			n, err := vm.Run(b)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := pass(frame(v6, 9000, Magic, 1, 2, 3, -1, size)); n < size { // the kernel keeps min(n, length)
			t.Errorf("v6=%v: the run's packet kept %d bytes, want %d", v6, n, size)
		}
		if pass(frame(v6, 9001, Magic, 1, 2, 3, -1, size)) != 0 {
			t.Errorf("v6=%v: another port passed", v6)
		}
		if pass(frame(v6, 9000, 0x12345678, 1, 2, 3, -1, size)) != 0 {
			t.Errorf("v6=%v: a packet without pktgen's magic passed", v6)
		}
		if pass(frame(!v6, 9000, Magic, 1, 2, 3, -1, 80)) != 0 {
			t.Errorf("v6=%v: the other family passed", v6)
		}
	}
	frag := frame(false, 9000, Magic, 1, 2, 3, -1, 60)
	frag[14+6] = 0x20 // more fragments
	if vm, _ := bpf.NewVM(filter(9000, false, 0)); vm != nil {
		if n, _ := vm.Run(frag); n != 0 {
			t.Error("a fragment passed")
		}
	}
	opts := frame(false, 9000, Magic, 1, 2, 3, -1, 64)
	opts[14] = 0x46 // a 24-byte header: the UDP header moves by 4
	copy(opts[14+24:], opts[14+20:60])
	if vm, _ := bpf.NewVM(filter(9000, false, 0)); vm != nil {
		if n, _ := vm.Run(opts); n == 0 {
			t.Error("a packet with IPv4 options did not pass")
		}
	}
}

// TestFilterSamples: with every 64, the filter passes sequence numbers
// 64, 128, ... and nothing between, over both families.
func TestFilterSamples(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		vm, err := bpf.NewVM(filter(9, v6, 64))
		if err != nil {
			t.Fatal(err)
		}
		passed := 0
		for seq := uint32(1); seq <= 1024; seq++ {
			n, err := vm.Run(frame(v6, 9, Magic, seq, 1, 1, -1, 78))
			if err != nil {
				t.Fatal(err)
			}
			if (n > 0) != (seq%64 == 0) {
				t.Fatalf("v6=%v: sequence %d passed %v", v6, seq, n > 0)
			}
			if n > 0 {
				passed++
			}
		}
		if passed != 16 {
			t.Errorf("v6=%v: %d of 1024 passed, want 16", v6, passed)
		}
		if n, _ := vm.Run(frame(v6, 10, Magic, 64, 1, 1, -1, 78)); n != 0 {
			t.Errorf("v6=%v: another port passed the sampling filter", v6)
		}
	}
}

func TestDecode(t *testing.T) {
	st, ok := decode(frame(false, 9000, Magic, 7, 100, 250, 999, 60), true)
	if !ok || st.Seq != 7 || st.SrcPort != 9 || st.SentNs != 100e9+250e3+999 {
		t.Fatalf("IPv4 with nanoseconds: %+v %v", st, ok)
	}
	if st, _ := decode(frame(false, 9000, Magic, 7, 100, 250, 999, 60), false); st.SentNs != 100e9+250e3 {
		t.Errorf("nanoseconds read where the engine writes none: %d", st.SentNs)
	}
	if st, ok := decode(frame(true, 9000, Magic, 8, 1, 2, -1, 78), true); !ok || st.Seq != 8 || st.SentNs != 1e9+2e3 {
		t.Errorf("IPv6 with no room for nanoseconds: %+v %v", st, ok)
	}
	for name, b := range map[string][]byte{
		"short":     frame(false, 9000, Magic, 1, 1, 1, -1, 60)[:40],
		"no magic":  frame(false, 9000, 1, 1, 1, 1, -1, 60),
		"bad usec":  frame(false, 9000, Magic, 1, 1, 1e6, -1, 60),
		"ARP":       append([]byte{12: 0x08, 13: 0x06}, make([]byte, 46)...),
		"short ihl": func() []byte { b := frame(false, 9000, Magic, 1, 1, 1, -1, 60); b[14] = 0x41; return b }(),
	} {
		if _, ok := decode(b, true); ok {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestTracker: latency figures, jitter, and the sequence accounting of
// losses, duplicates, reordering and gaps, on a known arrival order.
func TestTracker(t *testing.T) {
	tr := NewTracker()
	const ms = int64(1e6)
	// Thread 0 sends 1..10; 4-6 are lost, 8 arrives after 9, 2 twice.
	for _, p := range []struct {
		seq      uint32
		sent, rx int64
	}{{1, 0, 1 * ms}, {2, 1 * ms, 2 * ms}, {2, 1 * ms, 2 * ms}, {3, 2 * ms, 4 * ms}, {7, 6 * ms, 8 * ms}, {9, 8 * ms, 9 * ms}, {8, 7 * ms, 10 * ms}, {10, 9 * ms, 10 * ms}} {
		tr.Add(0, p.seq, p.sent, p.rx)
	}
	tr.Add(1, 5, 10*ms, 9*ms) // received before it was sent: a clock stepped
	s := tr.Sequence(1, map[int]uint64{0: 10, 1: 5})
	// The runs of losses: 4-6 of thread 0, 1-4 of thread 1.
	want := Sequence{UniqueReceived: 7 + 1, Lost: 3 + 4, Duplicates: 1, Reordered: 1, LongestGapPackets: 3, LongestGapNs: 4 * ms,
		LossRuns: map[uint64]uint64{3: 1, 4: 1}, MeanLossRun: 3.5}
	if !reflect.DeepEqual(*s, want) {
		t.Errorf("sequence\n got %+v\nwant %+v", *s, want)
	}
	other := NewTracker()
	other.Add(0, 1, 0, ms)
	other.Add(0, 12, 0, ms) // beyond what the sender says it sent
	other.Add(3, 1, 0, ms)  // a thread the sender did not have
	if s := other.Sequence(1, map[int]uint64{0: 10}); s.Outside != 2 || s.UniqueReceived != 1 || s.Lost != 9 {
		t.Errorf("outside the run: %+v", s)
	}
	l := tr.Latency("every packet", 1000)
	if l.Samples != 8 || l.MinNs != ms || l.MaxNs != 3*ms || l.Negative != 1 || l.P50Ns < ms || l.P50Ns > 2*ms+2*ms/1000 || l.P999Ns > l.MaxNs {
		t.Errorf("latency %+v", l)
	}
	if l.JitterNs <= 0 || l.JitterNs > float64(2*ms) {
		t.Errorf("jitter %v", l.JitterNs)
	}
	h, err := DecodeHistogram(l.Histogram)
	if err != nil || h.TotalCount() != 8 || h.Max() < 3*ms-3*ms/1000 {
		t.Errorf("histogram decoded: %v, %d values, max %d", err, h.TotalCount(), h.Max())
	}
	if e := NewTracker().Latency("every packet", 1); e.Samples != 0 || e.MaxNs != 0 {
		t.Errorf("empty tracker %+v", e)
	}
}
