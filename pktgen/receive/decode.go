package receive

import "encoding/binary"

// Stamp is what one received packet says of itself: pktgen's header
// (struct pktgen_hdr: magic, sequence number, tv_sec, tv_usec, all big
// endian) after the UDP header, and the nanoseconds within the
// microsecond that nslab's userspace engine writes in the two bytes after
// it where the frame has room (pktgen's readers ignore the padding).
type Stamp struct {
	SrcPort uint16
	Seq     uint32
	SentNs  int64 // the send time in nanoseconds since the epoch (CLOCK_REALTIME)
}

// decode reads the stamp of an Ethernet frame that the filter passed;
// false when it is too short or not what the filter let through. ns
// says whether the two bytes after pktgen's header hold nanoseconds.
func decode(frame []byte, ns bool) (Stamp, bool) {
	be := binary.BigEndian
	if len(frame) < 14 {
		return Stamp{}, false
	}
	var udp []byte
	switch be.Uint16(frame[12:]) {
	case 0x0800:
		if len(frame) < 14+20 {
			return Stamp{}, false
		}
		ihl := int(frame[14]&0x0f) * 4
		if ihl < 20 || len(frame) < 14+ihl {
			return Stamp{}, false
		}
		udp = frame[14+ihl:]
	case 0x86dd:
		if len(frame) < 14+40 {
			return Stamp{}, false
		}
		udp = frame[14+40:]
	default:
		return Stamp{}, false
	}
	if len(udp) < 8+16 || be.Uint32(udp[8:]) != Magic {
		return Stamp{}, false
	}
	pg := udp[8:]
	usec := be.Uint32(pg[12:])
	if usec >= 1e6 {
		return Stamp{}, false
	}
	sent := int64(be.Uint32(pg[8:]))*1e9 + int64(usec)*1e3
	if ns && len(pg) >= 18 {
		if sub := be.Uint16(pg[16:]); sub < 1000 {
			sent += int64(sub)
		}
	}
	return Stamp{SrcPort: be.Uint16(udp[0:]), Seq: be.Uint32(pg[4:]), SentNs: sent}, true
}
