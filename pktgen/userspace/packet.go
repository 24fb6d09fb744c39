// Package userspace is nslab's traffic engine for kernels without pktgen:
// it builds packets shaped like pktgen's (Ethernet, IPv4 or IPv6, UDP, and
// pktgen's payload header of magic, sequence number and timestamp) and sends
// them in batches on AF_PACKET sockets opened inside the sender's namespace,
// bypassing the qdisc as pktgen does.
package userspace

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/nslab/nslab/pktgen/engine"
)

// Magic is pktgen's payload magic number (struct pktgen_hdr).
const Magic = 0xbe9be955

// Header sizes.
const (
	ethLen    = 14
	ipv4Len   = 20
	ipv6Len   = 40
	udpLen    = 8
	pgHdrLen  = 16 // magic, seq, tv_sec, tv_usec
	nsLen     = 2  // the stamp's nanoseconds within its microsecond, after pktgen's header
	fcs       = 4
	ttl       = 32 // pktgen's TTL and hop limit
	protoUDP  = 17
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
)

// flow is the addresses and ports of one packet.
type flow struct {
	src, dst         netip.Addr
	srcPort, dstPort uint16
}

// builder writes packets into buffers. One builder per sending thread: it
// keeps that thread's sequence number and range iterators.
type builder struct {
	dstMAC, srcMAC net.HardwareAddr
	v6             bool
	sizes          span     // frame sizes including FCS
	mix            []uint32 // with a frame mix: one cycle of its sizes, interleaved (mixCycle)
	mixPos         int
	src, dst       addrSpan
	srcPort        span
	dstPort        span
	random         struct{ size, src, dst, srcPort, dstPort bool }
	flows, flowLen int

	seq     uint32
	ipID    uint16
	rng     *rand.Rand
	flowTab []flow // with flows: the current tuple of each flow
	flowPos int    // current flow
	flowCnt int    // packets sent from it
}

// span is an inclusive range walked in order or at random.
type span struct{ lo, hi, next uint32 }

func (s *span) pick(rng *rand.Rand, random bool) uint32 {
	if s.hi <= s.lo {
		return s.lo
	}
	if random {
		return s.lo + uint32(rng.Uint64N(uint64(s.hi-s.lo)+1))
	}
	v := s.lo + s.next
	s.next++
	if s.lo+s.next > s.hi || s.lo+s.next < s.lo {
		s.next = 0
	}
	return v
}

// addrSpan is a range of addresses that differ in their last 32 bits.
type addrSpan struct {
	base netip.Addr // the first address
	span
}

func newAddrSpan(lo, hi netip.Addr) addrSpan {
	s := addrSpan{base: lo}
	s.lo = low32(lo)
	s.hi = s.lo
	if hi.IsValid() {
		s.hi = low32(hi)
	}
	return s
}

func (a *addrSpan) pick(rng *rand.Rand, random bool) netip.Addr {
	return withLow32(a.base, a.span.pick(rng, random))
}

func low32(a netip.Addr) uint32 {
	b := a.As16()
	return binary.BigEndian.Uint32(b[12:])
}

func withLow32(a netip.Addr, v uint32) netip.Addr {
	if a.Is4() {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		return netip.AddrFrom4(b)
	}
	b := a.As16()
	binary.BigEndian.PutUint32(b[12:], v)
	return netip.AddrFrom16(b)
}

// next returns the tuple of the next packet.
func (b *builder) next() flow {
	if b.flows > 0 {
		if b.flowTab == nil {
			b.flowTab = make([]flow, b.flows)
			for i := range b.flowTab {
				b.flowTab[i] = b.fresh()
			}
		}
		f := b.flowTab[b.flowPos]
		b.flowCnt++
		if b.flowCnt >= max(1, b.flowLen) {
			b.flowCnt = 0
			b.flowTab[b.flowPos] = b.fresh() // the flow is re-drawn, as pktgen re-inits it
			b.flowPos = (b.flowPos + 1) % b.flows
		}
		return f
	}
	return b.fresh()
}

func (b *builder) fresh() flow {
	return flow{
		src:     b.src.pick(b.rng, b.random.src),
		dst:     b.dst.pick(b.rng, b.random.dst),
		srcPort: uint16(b.srcPort.pick(b.rng, b.random.srcPort)),
		dstPort: uint16(b.dstPort.pick(b.rng, b.random.dstPort)),
	}
}

// fill writes the next packet into buf (which must hold the largest frame)
// and returns its length on the wire without FCS. now is the timestamp the
// payload header carries.
func (b *builder) fill(buf []byte, now time.Time) int {
	size := int(b.sizes.pick(b.rng, b.random.size)) - fcs
	if len(b.mix) > 0 {
		size = int(b.mix[b.mixPos]) - fcs
		b.mixPos = (b.mixPos + 1) % len(b.mix)
	}
	f := b.next()
	copy(buf[0:6], b.dstMAC)
	copy(buf[6:12], b.srcMAC)
	l3 := buf[ethLen:size]
	var udp []byte
	var pseudo uint32
	if b.v6 {
		binary.BigEndian.PutUint16(buf[12:], etherIPv6)
		udp = l3[ipv6Len:]
		l3[0], l3[1], l3[2], l3[3] = 0x60, 0, 0, 0
		binary.BigEndian.PutUint16(l3[4:], uint16(len(udp)))
		l3[6], l3[7] = protoUDP, ttl
		s, d := f.src.As16(), f.dst.As16()
		copy(l3[8:24], s[:])
		copy(l3[24:40], d[:])
		pseudo = sum(l3[8:40], 0) + protoUDP + uint32(len(udp))
	} else {
		binary.BigEndian.PutUint16(buf[12:], etherIPv4)
		udp = l3[ipv4Len:]
		l3[0], l3[1] = 0x45, 0
		binary.BigEndian.PutUint16(l3[2:], uint16(len(l3)))
		binary.BigEndian.PutUint16(l3[4:], b.ipID)
		b.ipID++
		l3[6], l3[7], l3[8], l3[9] = 0, 0, ttl, protoUDP
		l3[10], l3[11] = 0, 0
		s, d := f.src.As4(), f.dst.As4()
		copy(l3[12:16], s[:])
		copy(l3[16:20], d[:])
		binary.BigEndian.PutUint16(l3[10:], ^fold(sum(l3[:ipv4Len], 0)))
		pseudo = sum(l3[12:20], 0) + protoUDP + uint32(len(udp))
	}
	binary.BigEndian.PutUint16(udp[0:], f.srcPort)
	binary.BigEndian.PutUint16(udp[2:], f.dstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
	udp[6], udp[7] = 0, 0
	pg := udp[udpLen:]
	binary.BigEndian.PutUint32(pg[0:], Magic)
	binary.BigEndian.PutUint32(pg[4:], b.seq)
	b.seq++
	ns := now.UnixNano()
	binary.BigEndian.PutUint32(pg[8:], uint32(ns/1e9))
	binary.BigEndian.PutUint32(pg[12:], uint32(ns%1e9/1e3))
	clear(pg[pgHdrLen:]) // zero padding adds nothing to the checksum
	stamped := pgHdrLen
	if len(pg) >= pgHdrLen+nsLen {
		// The nanoseconds within the microsecond, in the padding after
		// pktgen's header (its other readers ignore it).
		binary.BigEndian.PutUint16(pg[pgHdrLen:], uint16(ns%1e3))
		stamped += nsLen
	}
	c := ^fold(sum(udp[:udpLen+stamped], pseudo))
	if c == 0 {
		c = 0xffff // 0 means "no checksum" in UDP
	}
	binary.BigEndian.PutUint16(udp[6:], c)
	return size
}

// sum adds b as big-endian 16-bit words to s (one's complement, unfolded).
func sum(b []byte, s uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

// fold folds a 32-bit one's complement sum to 16 bits.
func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// maxLen is the longest packet on the wire (without FCS).
func (b *builder) maxLen() int {
	l := max(b.sizes.lo, b.sizes.hi)
	for _, s := range b.mix {
		l = max(l, s)
	}
	return int(l) - fcs
}

// mixCycle spreads a mix's sizes over one cycle of its weights, each as
// evenly as it goes (smooth weighted round robin): 7:4:1 of 64, 594 and
// 1518 bytes gives 12 frames with the 1518 in the middle, not 7 small
// ones in a row. Every cycle has the weights' proportions exactly.
func mixCycle(parts []engine.MixPart) []uint32 {
	total := 0
	for _, p := range parts {
		total += p.Weight
	}
	current := make([]int, len(parts))
	out := make([]uint32, 0, total)
	for range total {
		best := 0
		for i, p := range parts {
			current[i] += p.Weight
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out = append(out, uint32(parts[best].Size))
	}
	return out
}

// etherType is the EtherType of the packets.
func (b *builder) etherType() uint16 {
	if b.v6 {
		return etherIPv6
	}
	return etherIPv4
}
