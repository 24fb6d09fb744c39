package main

import (
	"fmt"
	"unsafe"

	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// loadXDPDrop loads the smallest XDP program there is, "return XDP_DROP":
// the sink that drops frames as early as the receiver can.
func loadXDPDrop() (int, error) {
	insns := []uint64{
		// r0 = 1 (XDP_DROP): BPF_ALU64|BPF_MOV|BPF_K, dst r0, imm 1
		0xb7 | 1<<32,
		// exit: BPF_JMP|BPF_EXIT
		0x95,
	}
	license := []byte("GPL\x00")
	var attr struct {
		progType    uint32
		insnCnt     uint32
		insns       uint64
		license     uint64
		logLevel    uint32
		logSize     uint32
		logBuf      uint64
		kernVersion uint32
		progFlags   uint32
		_           [64]byte
	}
	attr.progType = 6 // BPF_PROG_TYPE_XDP
	attr.insnCnt = uint32(len(insns))
	attr.insns = uint64(uintptr(unsafe.Pointer(&insns[0])))
	attr.license = uint64(uintptr(unsafe.Pointer(&license[0])))
	fd, _, errno := unix.Syscall(unix.SYS_BPF, 5 /* BPF_PROG_LOAD */, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return -1, fmt.Errorf("load XDP program: %w", errno)
	}
	return int(fd), nil
}

// attachXDPDrop attaches the drop program to a link of namespace n,
// natively if the driver can, else in generic mode, and returns the mode.
// netlink has no handle method for XDP, so this runs on a thread inside n.
func attachXDPDrop(n *ns.NS, link netlink.Link) (string, error) {
	fd, err := loadXDPDrop()
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	mode := "native"
	err = n.Do(func() error {
		if netlink.LinkSetXdpFdWithFlags(link, fd, 1<<2 /* XDP_FLAGS_DRV_MODE */) == nil {
			return nil
		}
		mode = "generic"
		return netlink.LinkSetXdpFdWithFlags(link, fd, 1<<1 /* XDP_FLAGS_SKB_MODE */)
	})
	if err != nil {
		return "", fmt.Errorf("attach XDP drop to %s: %w", link.Attrs().Name, err)
	}
	return mode, nil
}
