// Package frame holds the frame-size rules the lab file and both engines
// share: what a frame size counts and the smallest frame a run can send.
// It is a leaf, so the file format (topology/spec) and the traffic side
// (pktgen) use it without one importing the other.
package frame

// FCS is the Ethernet frame check sequence: counted in frame sizes, not
// in what a driver or pktgen's pkt_size counts.
const FCS = 4

// HeaderBytes is what a UDP packet shaped like pktgen's needs below the
// payload, FCS included: Ethernet, IP, UDP and pktgen's 16-byte payload
// header (magic, sequence number, timestamp).
func HeaderBytes(ipv6 bool) int {
	ip := 20
	if ipv6 {
		ip = 40
	}
	return 14 + ip + 8 + 16 + FCS
}

// Min is the smallest frame (including FCS) every engine sends as asked:
// Ethernet's 64 bytes, or the headers when they need more (82 for IPv6).
func Min(ipv6 bool) int { return max(64, HeaderBytes(ipv6)) }
