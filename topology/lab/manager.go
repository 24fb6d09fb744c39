// Package lab realises validated topology files as labs of network namespaces
// and removes them again: deploy (atomic, with an undo stack), destroy
// (re-runnable, ownership-checked), inspect and the lookups exec needs.
//
// Ownership: nslab only ever deletes or changes what it created. Every lab
// namespace carries a marker (the ifalias of its loopback, "nslab:LAB:NODE",
// set before the namespace becomes visible by name), every veth end it creates
// carries "nslab:LAB", and a state file under StateDir lists the namespaces of
// a lab before any of them is created. All other objects of a lab (veths,
// bridges, addresses, routes, sysctls) live inside its namespaces, so removing
// the namespaces removes them; the host namespace is never changed.
package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/sriov"

	"golang.org/x/sys/unix"
)

// DefaultStateDir is where nslab keeps one state file per deployed lab.
const DefaultStateDir = deployed.DefaultStateDir

// Manager deploys, destroys and inspects labs. The zero value uses the
// system directories; tests point the fields at private ones.
type Manager struct {
	NetnsDir string        // named namespaces; default ns.DefaultDir (/run/netns)
	StateDir string        // state files; default DefaultStateDir
	Sysfs    string        // where sysfs is, for SR-IOV; default /sys
	VFs      sriov.Control // PF-side VF settings; default netlink on the PF

	// Owner is who this manager deploys and destroys for ("": a person):
	// a deploy records it, and a destroy touches a lab only when the lab
	// records the same owner, so that an agent acting for one Kubernetes
	// Lab never removes a same-named lab another Lab, or a person, deployed
	// (see NotOwnerError).
	Owner string

	// Ephemeral lets a deploy mount its namespaces where they go with
	// this process (a benchmark in a mount namespace of its own, which
	// deploys and destroys as library calls): deploy then skips
	// ns.CheckDir. Not for labs meant to outlive the process.
	Ephemeral bool

	// Strict: a configuration line a routing daemon refuses fails the
	// deploy. Otherwise the deploy goes on without it, as the daemon
	// does when it starts, and the result's Warnings name it.
	Strict bool

	// Rootless: this process runs inside a user's rootless holder
	// (package rootless), where what needs the host's root is refused
	// (cmd finds it once, in caps.Capabilities).
	Rootless bool

	// BeforeStep, when set, runs before plan step i (0-based); an error
	// fails that step. It is a test seam (rollback at every position, a
	// deploy paused to be killed or interrupted), not for normal use.
	BeforeStep func(ctx context.Context, i int, s Step) error

	// Progress, when set, is called after each step of a deploy, in the
	// deploying goroutine, with how many of how many steps are done and
	// the step's name (a progress line for a large lab).
	Progress func(done, total int, step string)
}

func (m *Manager) netnsDir() string { return m.Store().NetnsDirOrDefault() }

func (m *Manager) sysfsRoot() string {
	if m.Sysfs != "" {
		return m.Sysfs
	}
	return "/sys"
}

func (m *Manager) vfControl() sriov.Control {
	if m.VFs != nil {
		return m.VFs
	}
	return sriov.Netlink{}
}

func (m *Manager) stateDir() string { return m.Store().StateDirOrDefault() }

// lock takes nslab's machine-wide lock (one deploy or destroy at a time) and
// returns its release function.
func (m *Manager) lock() (func(), error) {
	if err := os.MkdirAll(m.stateDir(), 0o755); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	p := filepath.Join(m.stateDir(), "lock")
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", p, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() { unix.Close(fd) }, nil
}

// ErrNotPrivileged is returned when the process lacks the capabilities a
// lab needs. Nothing has been attempted when it is returned.
var ErrNotPrivileged = errors.New("not privileged")

// Capabilities nslab needs: network configuration, and namespaces and mounts.
const (
	capNetAdmin = 12
	capSysAdmin = 21
)

// CheckPrivileges reports, before anything is attempted, whether this process
// may create namespaces and configure networking (CAP_NET_ADMIN and
// CAP_SYS_ADMIN, which root has).
func CheckPrivileges() error {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return fmt.Errorf("read capabilities: %w", err)
		}
		var missing []string
		if caps&(1<<capNetAdmin) == 0 {
			missing = append(missing, "CAP_NET_ADMIN")
		}
		if caps&(1<<capSysAdmin) == 0 {
			missing = append(missing, "CAP_SYS_ADMIN")
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: nslab needs root (%s missing): run it with sudo", ErrNotPrivileged, strings.Join(missing, " and "))
		}
		return nil
	}
	return fmt.Errorf("read capabilities: no CapEff line in /proc/self/status")
}

// NetnsDirOrDefault is the directory of named namespaces this manager uses.
func (m *Manager) NetnsDirOrDefault() string { return m.netnsDir() }
