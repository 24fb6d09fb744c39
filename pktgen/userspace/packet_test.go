package userspace

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/engine"
)

func testBuilder(j engine.Job) *builder {
	b := newBuilder(j, net.HardwareAddr{2, 0, 0, 0, 0, 2}, j.SrcIP, 0)
	b.rng = rand.New(rand.NewPCG(1, 2))
	return b
}

// TestIPv4Packet checks a built packet field by field, with checksums
// computed independently (labtest.Checksum, RFC 1071).
func TestIPv4Packet(t *testing.T) {
	j := engine.Job{Frame: 128, DstIP: netip.MustParseAddr("10.0.2.1"), SrcIP: netip.MustParseAddr("10.0.1.1"),
		DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, UDPSrc: engine.PortRange{Min: 1000, Max: 1002}}
	b := testBuilder(j)
	buf := make([]byte, 2048)
	now := time.Unix(1700000000, 123456000)
	for i := 0; i < 5; i++ {
		n := b.fill(buf, now)
		f := buf[:n]
		if n != 124 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[0] != 2 || f[11] != 2 {
			t.Fatalf("frame %x", f[:14])
		}
		ip := f[14:34]
		if labtest.Checksum(ip) != 0 {
			t.Errorf("IP checksum wrong")
		}
		if ip[0] != 0x45 || ip[8] != 32 || ip[9] != 17 || binary.BigEndian.Uint16(ip[2:]) != 110 {
			t.Errorf("IP header %x", ip)
		}
		udp := f[34:]
		pseudo := append(append(append([]byte{}, ip[12:20]...), 0, 17), byte(len(udp)>>8), byte(len(udp)))
		if labtest.Checksum(append(pseudo, udp...)) != 0 {
			t.Errorf("UDP checksum wrong")
		}
		if sp := binary.BigEndian.Uint16(udp[0:]); int(sp) != 1000+i%3 {
			t.Errorf("packet %d: source port %d, want sequential 1000..1002", i, sp)
		}
		if binary.BigEndian.Uint32(udp[8:]) != Magic || binary.BigEndian.Uint32(udp[12:]) != uint32(i)+engine.FirstSeq ||
			binary.BigEndian.Uint32(udp[16:]) != 1700000000 || binary.BigEndian.Uint32(udp[20:]) != 123456 {
			t.Errorf("pktgen header %x", udp[8:24])
		}
	}
}

func TestIPv6Packet(t *testing.T) {
	j := engine.Job{Frame: 100, DstIP: netip.MustParseAddr("fd00::1"), SrcIP: netip.MustParseAddr("fd00::2"), DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}}
	b := testBuilder(j)
	buf := make([]byte, 2048)
	f := buf[:b.fill(buf, time.Now())]
	if len(f) != 96 || binary.BigEndian.Uint16(f[12:]) != 0x86dd {
		t.Fatalf("frame %x", f)
	}
	ip := f[14:54]
	udp := f[54:]
	if ip[0]>>4 != 6 || ip[6] != 17 || ip[7] != 32 || int(binary.BigEndian.Uint16(ip[4:])) != len(udp) {
		t.Errorf("IPv6 header %x", ip)
	}
	pseudo := append(append([]byte{}, ip[8:40]...), 0, 0, byte(len(udp)>>8), byte(len(udp)), 0, 0, 0, 17)
	if labtest.Checksum(append(pseudo, udp...)) != 0 {
		t.Errorf("UDP checksum wrong")
	}
}

// TestRangesAndFlows checks sequential and random walks stay in range and
// that flows repeat their tuple flowlen times.
func TestRangesAndFlows(t *testing.T) {
	j := engine.Job{Frame: 64, FrameMax: 80, DstIP: netip.MustParseAddr("10.0.0.1"), DstIPMax: netip.MustParseAddr("10.0.0.4"),
		SrcIP: netip.MustParseAddr("10.1.0.1"), DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, Random: engine.Random{Size: true}}
	b := testBuilder(j)
	buf := make([]byte, 2048)
	dsts := map[byte]int{}
	for i := 0; i < 400; i++ {
		n := b.fill(buf, time.Now())
		if n < 60 || n > 76 {
			t.Fatalf("size %d outside 60..76", n)
		}
		dsts[buf[14+19]]++
	}
	if len(dsts) != 4 || dsts[1] != 100 || dsts[4] != 100 {
		t.Errorf("sequential destinations %v, want 1..4 100 times each", dsts)
	}
	j.FrameMax, j.Flows, j.FlowLen = 0, 2, 3
	b = testBuilder(j)
	var seq []byte
	for i := 0; i < 12; i++ {
		b.fill(buf, time.Now())
		seq = append(seq, buf[14+19])
	}
	for i := 0; i+2 < 12; i += 3 {
		if seq[i] != seq[i+1] || seq[i] != seq[i+2] {
			t.Errorf("flow of 3 packets changed tuple: %v", seq)
		}
	}
}

// TestMixCycle: a cycle holds each size as often as its weight says, the
// sizes interleaved.
func TestMixCycle(t *testing.T) {
	c := mixCycle([]engine.MixPart{{Size: 64, Weight: 7}, {Size: 594, Weight: 4}, {Size: 1518, Weight: 1}})
	count := map[uint32]int{}
	run, longest := 0, 0
	for i, s := range c {
		count[s]++
		if i > 0 && s == c[i-1] {
			run++
		} else {
			run = 1
		}
		longest = max(longest, run)
	}
	if len(c) != 12 || count[64] != 7 || count[594] != 4 || count[1518] != 1 || longest > 2 {
		t.Errorf("cycle %v: counts %v, longest run %d", c, count, longest)
	}
}
