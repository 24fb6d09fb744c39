package bench

import (
	"unsafe"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// linkSpeed asks the driver of an interface for its speed in Mb/s (the
// ETHTOOL_GSET ioctl, from a thread inside its namespace n). 0 when
// unknown. veth reports a nominal 10000.
func linkSpeed(n *ns.NS, ifname string) uint32 {
	var speed uint32
	_ = n.Do(func() error { // unknown when it cannot be asked: 0
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var cmd struct {
			cmd, supported, advertising uint32
			speed                       uint16
			duplex, port, phyAddress    uint8
			transceiver, autoneg        uint8
			mdioSupport                 uint8
			maxtxpkt, maxrxpkt          uint32
			speedHi                     uint16
			_                           [26]byte
		}
		cmd.cmd = 0x1 // ETHTOOL_GSET
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data uintptr
			_    [16]byte
		}
		copy(ifr.name[:], ifname)
		ifr.data = uintptr(unsafe.Pointer(&cmd))
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
			return errno
		}
		s := uint32(cmd.speedHi)<<16 | uint32(cmd.speed)
		if s != 0xffffffff && s != 0xffff {
			speed = s
		}
		return nil
	})
	return speed
}

// lineRatePPS is the most frames of a size a link of speed Mb/s carries:
// each frame also costs 20 bytes of preamble and inter-frame gap.
func lineRatePPS(speedMbps uint32, frame int) float64 {
	return float64(speedMbps) * 1e6 / float64((frame+20)*8)
}
