package lab

import (
	"fmt"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/topology/spec"
)

// checkPlacement checks, without changing anything, that this machine can
// give the lab's nodes the CPUs they ask for: the CPUs are online, and the
// kernel has what the receive mode needs.
func (m *Manager) checkPlacement(l *spec.Lab) []string {
	mach := host.Machine{Sysfs: m.Sysfs}
	var problems []string
	var online spec.CPUSet
	for _, n := range l.Nodes {
		if !n.Placed() {
			continue
		}
		if online == nil {
			var err error
			if online, err = mach.OnlineCPUs(); err != nil {
				return []string{fmt.Sprintf("node %s asks for cpu %s, but this machine's CPUs cannot be read: %v", n.Name, n.CPUs, err)}
			}
		}
		if missing := missingCPUs(n.CPUs, online); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("node %s asks for cpu %s, but this machine has cpu %s online (/sys/devices/system/cpu/online): place it on CPUs the machine has", n.Name, missing, online))
		}
		feature := host.RPS
		if receiveMode(n) == spec.ReceiveNAPI {
			feature = host.Threaded
		}
		if err := mach.Has(feature); err != nil {
			problems = append(problems, fmt.Sprintf("node %s: %v", n.Name, err))
		}
	}
	return problems
}

// missingCPUs is what of want is not in have.
func missingCPUs(want, have spec.CPUSet) spec.CPUSet {
	var out spec.CPUSet
	for _, c := range want {
		if !have.Contains(c) {
			out = append(out, c)
		}
	}
	return out
}
