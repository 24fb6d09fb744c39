package lab

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nslab/nslab/topology/lab/state"
)

// The state file (see package state) lives in the Manager's StateDir.

func (m *Manager) statePath(labName string) string { return state.Path(m.stateDir(), labName) }

// loadState reads a lab's state; it returns (nil, nil) when there is none,
// and a *state.DamagedStateError when the file cannot be used.
func (m *Manager) loadState(labName string) (*state.State, error) {
	return m.Store().LoadState(labName)
}

// saveState writes the state atomically (see state.Save).
func (m *Manager) saveState(st *state.State) error { return state.Save(m.stateDir(), st) }

// removeState removes the lab's state file.
func (m *Manager) removeState(labName string) error { return state.Remove(m.stateDir(), labName) }

// removeLogs removes the lab's directory of program logs.
func (m *Manager) removeLogs(labName string) error {
	if err := os.RemoveAll(filepath.Join(m.stateDir(), labName)); err != nil {
		return fmt.Errorf("remove the logs of lab %s: %w", labName, err)
	}
	return nil
}

// stateLabs lists the labs that have a state file.
func (m *Manager) stateLabs() ([]string, error) { return state.Labs(m.stateDir()) }

// DeployedFrom returns the lab whose state records a file of exactly these
// contents (their SHA-256, hex), when one lab's does: the name the file
// gives, without parsing it.
func (m *Manager) DeployedFrom(sum string) (string, bool) {
	labs, err := m.stateLabs()
	if err != nil {
		return "", false
	}
	found := ""
	for _, name := range labs {
		st, err := m.loadState(name)
		if err != nil || st == nil || st.SHA256 != sum {
			continue
		}
		if found != "" {
			return "", false // two labs from the same file: let its name: say
		}
		found = name
	}
	return found, found != ""
}

// Recorded returns the state nslab keeps of a deployed lab.
func (m *Manager) Recorded(labName string) (*state.State, error) {
	return m.Store().Recorded(labName)
}

// LiveFile is where a bench of lab labName publishes its live stream (one
// JSON line per event, see report.LiveEvent) for nslab top, web and
// metrics to read: in the lab's directory under StateDir, which destroy
// removes with the lab.
func (m *Manager) LiveFile(labName string) string {
	return filepath.Join(m.stateDir(), labName, "bench.jsonl")
}
