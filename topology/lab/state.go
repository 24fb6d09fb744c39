package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/spec"
)

// Phases of a lab in its state file.
const (
	PhaseDeploying = "deploying" // namespaces listed, creation under way (or interrupted)
	PhaseDeployed  = "deployed"
)

// State is what nslab records about a lab, in StateDir/LAB.json. It is
// written before the first namespace is created, so that a deploy killed at
// any point can be undone, and it carries the topology file's contents so
// that destroy and inspect work when the file has changed or is gone.
type State struct {
	Version    int        `json:"version"`
	Lab        string     `json:"lab"`
	File       string     `json:"file"`   // absolute path at deploy time
	SHA256     string     `json:"sha256"` // of the file's contents
	Source     string     `json:"source"` // the file's contents as deployed
	Phase      string     `json:"phase"`
	PID        int        `json:"pid"`
	Started    time.Time  `json:"started"`
	Deployed   time.Time  `json:"deployed,omitzero"`
	Namespaces []NSRecord `json:"namespaces"`
	SRIOV      []PFRecord `json:"sriov,omitempty"` // host changes, recorded before they are made
	// Placement is the CPU placement applied, node by node; Unplaced
	// says why the file's placement was left out (bench --placement
	// auto on a machine without the CPUs), empty when it was not.
	Placement []PlacementRecord `json:"placement,omitempty"`
	Unplaced  string            `json:"unplaced,omitempty"`
	// Services are the programs started in nodes (run:), recorded before
	// each starts.
	Services []ServiceRecord `json:"services,omitempty"`
	// Host is the host whose part of a lab spanning hosts this is;
	// Tunnels are its VXLAN interfaces, recorded before they are made.
	Host    string         `json:"host,omitempty"`
	Tunnels []TunnelRecord `json:"tunnels,omitempty"`
}

// PlacementRecord is the CPU placement of one node's receive work.
type PlacementRecord struct {
	Node        string   `json:"node"`
	CPUs        string   `json:"cpus"`    // kernel list format
	Receive     string   `json:"receive"` // rps or napi
	Interfaces  []string `json:"interfaces"`
	NAPIThreads []int    `json:"napi_threads,omitempty"` // pids of the pinned napi kthreads
}

// NSRecord is one namespace of a lab.
type NSRecord struct {
	Node  string `json:"node"`
	Name  string `json:"name"`
	Inode uint64 `json:"inode,omitempty"` // nsfs inode once created
}

const stateVersion = 1

func (m *Manager) statePath(labName string) string {
	return filepath.Join(m.stateDir(), labName+".json")
}

// loadState reads a lab's state; it returns (nil, nil) when there is none.
func (m *Manager) loadState(labName string) (*State, error) {
	data, err := os.ReadFile(m.statePath(labName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state of lab %s: %w", labName, err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("read state of lab %s (%s): %w", labName, m.statePath(labName), err)
	}
	return &st, nil
}

// saveState writes the state atomically (write to a temporary file, then
// rename), so a reader or a crash never sees half a file.
func (m *Manager) saveState(st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state of lab %s: %w", st.Lab, err)
	}
	p := m.statePath(st.Lab)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write state of lab %s: %w", st.Lab, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("write state of lab %s: %w", st.Lab, err)
	}
	return nil
}

func (m *Manager) removeState(labName string) error {
	err := os.Remove(m.statePath(labName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove state of lab %s: %w", labName, err)
	}
	return nil
}

// removeLogs removes the lab's directory of program logs.
func (m *Manager) removeLogs(labName string) error {
	if err := os.RemoveAll(filepath.Join(m.stateDir(), labName)); err != nil {
		return fmt.Errorf("remove the logs of lab %s: %w", labName, err)
	}
	return nil
}

// stateLabs lists the labs that have a state file.
func (m *Manager) stateLabs() ([]string, error) {
	ents, err := os.ReadDir(m.stateDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list labs in %s: %w", m.stateDir(), err)
	}
	var labs []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			labs = append(labs, name)
		}
	}
	sort.Strings(labs)
	return labs, nil
}

// Spec re-parses the topology recorded in the state.
func (st *State) Spec() (*spec.Lab, error) {
	l, err := spec.Parse(st.File+" (as deployed)", []byte(st.Source))
	if err != nil {
		return nil, fmt.Errorf("recorded topology of lab %s: %w", st.Lab, err)
	}
	if st.Host != "" {
		return l.Part(st.Host)
	}
	return l, nil
}

// processAlive reports whether pid names a running process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// Recorded returns the state nslab keeps of a deployed lab.
func (m *Manager) Recorded(labName string) (*State, error) {
	st, err := m.loadState(labName)
	if err == nil && st == nil {
		err = fmt.Errorf("lab %s: %w (no state file in %s)", labName, ErrNotDeployed, m.stateDir())
	}
	return st, err
}
