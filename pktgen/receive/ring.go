package receive

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A packet socket's TPACKET_V3 receive ring: the kernel writes each
// packet, with its receive timestamp, into blocks of a ring shared with
// the process, and hands a block over when it is full or after
// retireTimeout. The reader walks a block without a system call per
// packet (packet(7), Documentation/networking/packet_mmap.rst).
const (
	blockSize     = 1 << 20 // bytes per block
	blockCount    = 64      // 64 MB of ring: about 1 s of 64-byte frames at 1 Mpps
	frameSize     = 1 << 11 // the ring's frame unit; V3 packs packets tighter
	retireTimeout = 10      // ms a partly filled block waits before it is handed over
)

// Offsets in struct tpacket_block_desc (its tpacket_hdr_v1) and struct
// tpacket3_hdr, from linux/if_packet.h.
const (
	bdStatus      = 8  // h1.block_status
	bdNumPkts     = 12 // h1.num_pkts
	bdFirstPkt    = 16 // h1.offset_to_first_pkt
	pkNextOffset  = 0  // tp_next_offset
	pkSec         = 4  // tp_sec
	pkNsec        = 8  // tp_nsec
	pkSnaplen     = 12 // tp_snaplen
	pkLen         = 16 // tp_len: the packet's length on the wire, without FCS
	pkMac         = 24 // tp_mac: offset of the frame from the header
	pkHeaderBytes = 48 // sizeof(struct tpacket3_hdr), with its padding
)

// ring is the mapped ring of packet socket fd.
type ring struct {
	fd   int
	mem  []byte
	next int // the block to read next
}

// setupRing asks the kernel for the receive ring of socket fd and maps it.
//
// Equivalent to: setsockopt(PACKET_VERSION, TPACKET_V3);
// setsockopt(PACKET_RX_RING, {1 MB x 64}); mmap
func setupRing(fd int) (*ring, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return nil, fmt.Errorf("use TPACKET_V3: %w", err)
	}
	req := unix.TpacketReq3{
		Block_size: blockSize, Block_nr: blockCount,
		Frame_size: frameSize, Frame_nr: blockSize / frameSize * blockCount,
		Retire_blk_tov: retireTimeout,
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("set up the receive ring: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, blockSize*blockCount, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the receive ring: %w", err)
	}
	return &ring{fd: fd, mem: mem}, nil
}

// close unmaps the ring (the socket is closed by its owner).
func (r *ring) close() error { return unix.Munmap(r.mem) }

// status is the block's block_status, read as the kernel publishes it.
func (r *ring) status(block []byte) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&block[bdStatus])))
}

// release hands a read block back to the kernel.
func (r *ring) release(block []byte) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&block[bdStatus])), unix.TP_STATUS_KERNEL)
}

// drain calls each for every packet of every block the kernel has handed
// over, in order, and gives the blocks back. It returns the number of
// packets read.
func (r *ring) drain(each func(frame []byte, wire int, sec, nsec uint32)) int {
	n := 0
	for {
		block := r.mem[r.next*blockSize : (r.next+1)*blockSize]
		if r.status(block)&unix.TP_STATUS_USER == 0 {
			return n
		}
		n += walkBlock(block, each)
		r.release(block)
		r.next = (r.next + 1) % blockCount
	}
}

// walkBlock calls each for the packets of one block.
func walkBlock(block []byte, each func(frame []byte, wire int, sec, nsec uint32)) int {
	le := binary.NativeEndian
	count := int(le.Uint32(block[bdNumPkts:]))
	off := int(le.Uint32(block[bdFirstPkt:]))
	for i := 0; i < count && off+pkHeaderBytes <= len(block); i++ {
		h := block[off:]
		mac, snap := int(le.Uint16(h[pkMac:])), int(le.Uint32(h[pkSnaplen:]))
		if mac+snap <= len(h) {
			each(h[mac:mac+snap], int(le.Uint32(h[pkLen:])), le.Uint32(h[pkSec:]), le.Uint32(h[pkNsec:]))
		}
		next := int(le.Uint32(h[pkNextOffset:]))
		if next == 0 {
			break
		}
		off += next
	}
	return count
}
