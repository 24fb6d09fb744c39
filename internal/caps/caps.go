// Package caps is what this process may do on this machine, found once
// (in cmd) and passed down: whether the lab verbs run rootless (in a user
// namespace of the user's, without the host's root: no BPF, no placement)
// and whether the CPUs are emulated (the VM harness's qemu without KVM,
// where a BPF program on every timer expiry would be the emulator's
// stalls and slow the emulated kernel past the suite's limit). Libraries
// take a *Capabilities and detect when given none.
package caps

import (
	"os"
	"strings"

	"github.com/nslab/nslab/topology/rootless"
)

// EmulatedCPUsWord is the kernel command-line word with which the VM
// harness boots a kernel on emulated CPUs (qemu's TCG).
const EmulatedCPUsWord = "nslab.emulated_cpus"

// Capabilities are what nslab may do here.
type Capabilities struct {
	// Rootless: the lab verbs run in the user's own namespaces; BPF,
	// kernel pktgen and CPU placement need the host's root.
	Rootless bool
	// EmulatedCPUs: the CPUs are emulated; stalls are not watched.
	EmulatedCPUs bool
}

// Detect finds the capabilities of this process: rootless when its
// environment (lookup: os.LookupEnv, in cmd) says it runs inside a
// rootless holder (package rootless), emulated CPUs when the kernel was
// booted with EmulatedCPUsWord.
func Detect(lookup func(string) (string, bool)) Capabilities {
	return Capabilities{Rootless: rootless.Inside(lookup), EmulatedCPUs: emulated("/proc/cmdline")}
}

// Or is c, or what Detect finds when c is nil.
func Or(c *Capabilities) Capabilities {
	if c != nil {
		return *c
	}
	return Detect(func(string) (string, bool) { return "", false }) // a library given none: not inside a holder
}

// BPF reports whether BPF programs may be loaded.
func (c Capabilities) BPF() bool { return !c.Rootless }

// emulated reports whether the kernel command line in path holds
// EmulatedCPUsWord.
func emulated(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, w := range strings.Fields(string(b)) {
		if w == EmulatedCPUsWord {
			return true
		}
	}
	return false
}
