// Package ethtool is the SIOCETHTOOL ioctl, for the few settings nslab
// reads and changes on a lab's interfaces: TSO, GRO and transmit
// checksumming, rx/tx queues
// (channels) and the link speed. Every call acts on the interface of that
// name in the calling thread's network namespace (run it from a thread
// inside the node: ns.NS.Do).
//
// The ioctl is used rather than ethtool's genetlink family: these four
// commands are a struct each, and the ioctl answers on every kernel nslab
// runs on.
package ethtool

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Commands (linux/ethtool.h).
const (
	cmdGSet      = 0x01
	cmdGRxCsum   = 0x14
	cmdSRxCsum   = 0x15
	cmdGTxCsum   = 0x16
	cmdSTxCsum   = 0x17
	cmdGGSO      = 0x23
	cmdSGSO      = 0x24
	cmdGTSO      = 0x1e
	cmdSTSO      = 0x1f
	cmdGGRO      = 0x2b
	cmdSGRO      = 0x2c
	cmdGChannels = 0x3c
	cmdSChannels = 0x3d
)

// ioctl runs an ethtool command whose data is the struct at p (which
// starts with the command).
func ioctl(ifc string, p unsafe.Pointer) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], ifc)
	ifr.data = uintptr(p)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}

// value runs a command that takes or gives one value (struct
// ethtool_value).
func value(ifc string, cmd, data uint32) (uint32, error) {
	val := struct{ cmd, data uint32 }{cmd, data}
	err := ioctl(ifc, unsafe.Pointer(&val))
	return val.data, err
}

// SetTSO turns TCP segmentation offload on or off.
//
// Equivalent to: ethtool -K IF tso on|off
func SetTSO(ifc string, on bool) error { return setFeature(ifc, cmdSTSO, "tso", on) }

// TSO reads whether TCP segmentation offload is on.
func TSO(ifc string) (bool, error) {
	v, err := value(ifc, cmdGTSO, 0)
	return v != 0, err
}

// SetTxChecksum turns transmit checksum offload on or off (off, the
// stack fills every checksum before the frame leaves; TSO and
// scatter-gather, which need it, go off with it).
//
// Equivalent to: ethtool -K IF tx on|off
func SetTxChecksum(ifc string, on bool) error { return setFeature(ifc, cmdSTxCsum, "tx", on) }

// TxChecksum reads whether transmit checksum offload is on.
func TxChecksum(ifc string) (bool, error) {
	v, err := value(ifc, cmdGTxCsum, 0)
	return v != 0, err
}

// Offloads are the offloads Feature and SetFeature take, by the names
// nslab's lab file gives them, with ethtool -K's word and the ioctl's get
// and set commands.
var Offloads = map[string]struct {
	Word     string
	Get, Set uint32
}{
	"gro":         {"gro", cmdGGRO, cmdSGRO},
	"gso":         {"gso", cmdGGSO, cmdSGSO},
	"tso":         {"tso", cmdGTSO, cmdSTSO},
	"rx-checksum": {"rx", cmdGRxCsum, cmdSRxCsum},
	"tx-checksum": {"tx", cmdGTxCsum, cmdSTxCsum},
}

// Feature reads offload name (a key of Offloads) of interface ifc.
func Feature(ifc, name string) (bool, error) {
	o, ok := Offloads[name]
	if !ok {
		return false, fmt.Errorf("no offload %q", name)
	}
	v, err := value(ifc, o.Get, 0)
	if err != nil {
		return false, fmt.Errorf("ethtool -k %s (%s): %w", ifc, o.Word, err)
	}
	return v != 0, nil
}

// SetFeature turns offload name (a key of Offloads) of ifc on or off.
//
// Equivalent to: ethtool -K IF WORD on|off
func SetFeature(ifc, name string, on bool) error {
	o, ok := Offloads[name]
	if !ok {
		return fmt.Errorf("no offload %q", name)
	}
	return setFeature(ifc, o.Set, o.Word, on)
}

// SetGRO turns generic receive offload on or off.
//
// Equivalent to: ethtool -K IF gro on|off
func SetGRO(ifc string, on bool) error { return setFeature(ifc, cmdSGRO, "gro", on) }

// setFeature turns the feature that cmd sets (named what, as ethtool -K
// names it) on or off.
func setFeature(ifc string, cmd uint32, what string, on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if _, err := value(ifc, cmd, v); err != nil {
		return fmt.Errorf("ethtool -K %s %s %v: %w", ifc, what, on, err)
	}
	return nil
}

// GRO reads whether generic receive offload is on.
func GRO(ifc string) (bool, error) {
	v, err := value(ifc, cmdGGRO, 0)
	return v != 0, err
}

// channels is struct ethtool_channels.
type channels struct {
	cmd                                         uint32
	maxRx, maxTx, maxOther, maxCombined         uint32
	rxCount, txCount, otherCount, combinedCount uint32
}

// SetQueues sets the rx and tx queues ifc uses (a veth takes any count up
// to what it was created with).
//
// Equivalent to: ethtool -L IF rx N tx N
func SetQueues(ifc string, n int) error {
	ch := channels{cmd: cmdGChannels}
	if err := ioctl(ifc, unsafe.Pointer(&ch)); err != nil {
		return fmt.Errorf("ethtool -l %s: %w", ifc, err)
	}
	if uint32(n) > ch.maxRx || uint32(n) > ch.maxTx {
		return fmt.Errorf("ethtool -L %s rx %d tx %d: it was created with %d rx and %d tx queues", ifc, n, n, ch.maxRx, ch.maxTx)
	}
	ch.cmd, ch.rxCount, ch.txCount = cmdSChannels, uint32(n), uint32(n)
	if err := ioctl(ifc, unsafe.Pointer(&ch)); err != nil {
		return fmt.Errorf("ethtool -L %s rx %d tx %d: %w", ifc, n, n, err)
	}
	return nil
}

// Speed is the link speed the driver reports, in Mb/s (ETHTOOL_GSET); 0
// when unknown. veth reports a nominal 10000.
func Speed(ifc string) (uint32, error) {
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
	cmd.cmd = cmdGSet
	if err := ioctl(ifc, unsafe.Pointer(&cmd)); err != nil {
		return 0, fmt.Errorf("ethtool %s: %w", ifc, err)
	}
	if s := uint32(cmd.speedHi)<<16 | uint32(cmd.speed); s != 0xffffffff && s != 0xffff {
		return s, nil
	}
	return 0, nil
}
