// Package host reads the facts about this machine that labs and runs
// depend on and that no namespace changes: which CPUs are online, which
// ones this process may use, and whether the kernel has the receive
// placement features (RPS, threaded NAPI). It changes nothing.
package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// Machine reads the machine's facts under a sysfs root (a field, so tests
// can give a fake tree). Its zero value reads /sys.
type Machine struct {
	Sysfs string
}

func (m Machine) path(p string) string {
	root := m.Sysfs
	if root == "" {
		root = "/sys"
	}
	return filepath.Join(root, p)
}

// OnlineCPUs is the CPUs the kernel runs now
// (/sys/devices/system/cpu/online): the machine's CPUs, whatever this
// process's affinity is.
func (m Machine) OnlineCPUs() (spec.CPUSet, error) {
	p := m.path("devices/system/cpu/online")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read online CPUs: %w", err)
	}
	set, err := spec.ParseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return set, nil
}

// AllowedCPUs is the CPUs this process may run on (sched_getaffinity: what
// taskset and cgroups leave it).
func AllowedCPUs() (spec.CPUSet, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	var out spec.CPUSet
	for c := 0; c < len(set)*64 && len(out) < set.Count(); c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Feature is a kernel capability a lab may need, found through a file the
// kernel has only when it has the feature.
type Feature struct {
	Name   string // what the lab file asks for, for messages
	Config string // the kernel option that provides it
	File   string // under sysfs: present only with the feature
}

// Features nslab's CPU placement needs.
var (
	RPS      = Feature{"receive: rps", "CONFIG_RPS", "class/net/lo/queues/rx-0/rps_cpus"}
	Threaded = Feature{"receive: napi", "threaded NAPI (Linux 5.12 or later)", "class/net/lo/threaded"}
)

// Has reports whether the kernel has f; the error says which option it
// lacks. It reads the host's sysfs (the host namespace's lo), which is
// enough: a kernel feature is the same in every namespace.
func (m Machine) Has(f Feature) error {
	_, err := os.Stat(m.path(f.File))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s needs %s, which this kernel lacks (no %s)", f.Name, f.Config, m.path(f.File))
	}
	return err
}
