package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// threadedNAPI puts ifc's receive work into napi kthreads pinned to cpus:
// GRO on (which gives a veth NAPI), threaded NAPI on, and the kthreads the
// kernel creates for ifc pinned. It runs on a thread inside the node's
// namespace that sees the node's sysfs, and returns the kthreads' pids.
//
// The kthreads are found as the napi/ threads that exist after threaded is
// written and did not before (the kernel creates them during the write);
// deploys are serialized by nslab's lock, and each must be named after ifc.
func threadedNAPI(ifc string, cpus spec.CPUSet, veth bool) ([]int, error) {
	if veth {
		if err := setGRO(ifc, true); err != nil {
			return nil, err
		}
	}
	before := napiThreads()
	if err := writeSysfs(filepath.Join("/sys/class/net", ifc, "threaded"), "1"); err != nil {
		return nil, err
	}
	var pids []int
	for pid, comm := range napiThreads() {
		if _, old := before[pid]; old || !strings.HasPrefix("napi/"+ifc+"-", commPrefix(comm)) {
			continue
		}
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return nil, fmt.Errorf("pin %s (pid %d) to cpu %s: %w", comm, pid, cpus, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("threaded NAPI is on, but no napi/%s kthread appeared (does its driver use NAPI?)", ifc)
	}
	slices.Sort(pids)
	return pids, nil
}

// commPrefix is the part of a kthread name that identifies the device:
// "napi/IF-ID" up to its last dash (names may be cut at 15 bytes on old
// kernels).
func commPrefix(comm string) string {
	if i := strings.LastIndex(comm, "-"); i > len("napi/") {
		return comm[:i+1]
	}
	return comm
}

// napiThreads lists the napi kthreads of the machine by pid.
func napiThreads() map[int]string {
	out := map[int]string{}
	paths, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(b), "napi/") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		out[pid] = strings.TrimSpace(string(b))
	}
	return out
}

// ethtool commands (linux/ethtool.h).
const (
	ethtoolGTSO = 0x1e
	ethtoolSTSO = 0x1f
	ethtoolGGRO = 0x2b
	ethtoolSGRO = 0x2c
)

// setTSO turns TCP segmentation offload (all TSO features) on or off for
// ifc in the calling thread's namespace.
//
// Equivalent to: ethtool -K IF tso on|off
func setTSO(ifc string, on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if _, err := ethtoolValue(ifc, ethtoolSTSO, v); err != nil {
		return fmt.Errorf("ethtool -K %s tso %v: %w", ifc, on, err)
	}
	return nil
}

// tsoOn reads whether TSO is on for ifc in the calling thread's namespace.
func tsoOn(ifc string) (bool, error) {
	v, err := ethtoolValue(ifc, ethtoolGTSO, 0)
	return v != 0, err
}

// setGRO turns generic receive offload on or off for ifc in the calling
// thread's namespace.
//
// Equivalent to: ethtool -K IF gro on|off
func setGRO(ifc string, on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if _, err := ethtoolValue(ifc, ethtoolSGRO, v); err != nil {
		return fmt.Errorf("ethtool -K %s gro %v: %w", ifc, on, err)
	}
	return nil
}

// groOn reads whether GRO is on for ifc in the calling thread's namespace.
func groOn(ifc string) (bool, error) {
	v, err := ethtoolValue(ifc, ethtoolGGRO, 0)
	return v != 0, err
}

// ethtoolValue runs an ethtool command that takes or gives one value.
func ethtoolValue(ifc string, cmd, data uint32) (uint32, error) {
	val := struct{ cmd, data uint32 }{cmd, data}
	err := ethtoolStruct(ifc, unsafe.Pointer(&val))
	return val.data, err
}

// ethtool_channels commands (linux/ethtool.h).
const (
	ethtoolGChannels = 0x3c
	ethtoolSChannels = 0x3d
)

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	cmd                                         uint32
	maxRx, maxTx, maxOther, maxCombined         uint32
	rxCount, txCount, otherCount, combinedCount uint32
}

// setChannels sets the rx and tx queues ifc uses, in the calling thread's
// namespace (a veth takes any count up to what it was created with).
//
// Equivalent to: ethtool -L IF rx N tx N
func setChannels(ifc string, n int) error {
	ch := ethtoolChannels{cmd: ethtoolGChannels}
	if err := ethtoolStruct(ifc, unsafe.Pointer(&ch)); err != nil {
		return fmt.Errorf("ethtool -l %s: %w", ifc, err)
	}
	if uint32(n) > ch.maxRx || uint32(n) > ch.maxTx {
		return fmt.Errorf("ethtool -L %s rx %d tx %d: it was created with %d rx and %d tx queues", ifc, n, n, ch.maxRx, ch.maxTx)
	}
	ch.cmd, ch.rxCount, ch.txCount = ethtoolSChannels, uint32(n), uint32(n)
	if err := ethtoolStruct(ifc, unsafe.Pointer(&ch)); err != nil {
		return fmt.Errorf("ethtool -L %s rx %d tx %d: %w", ifc, n, n, err)
	}
	return nil
}

// ethtoolStruct runs an ethtool command whose data is the struct at p
// (which starts with the command).
func ethtoolStruct(ifc string, p unsafe.Pointer) error {
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
