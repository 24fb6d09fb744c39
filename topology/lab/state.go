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
	// Cgroups are the directories of the nodes' cgroups (limits:), the
	// lab's first, recorded before they are made.
	Cgroups []string `json:"cgroups,omitempty"`
	// Stopped are the nodes nslab node stop stopped (see StopNode),
	// recorded before they stop.
	Stopped []StoppedNode `json:"stopped,omitempty"`
	// LastChange is the last stop or start of a node, what check --wait
	// measures convergence from.
	LastChange *LabChange `json:"last_change,omitempty"`
	// Applying is an apply under way, recorded before it changes
	// anything (see Apply); nil: none.
	Applying *ApplyRecord `json:"applying,omitempty"`
	// Variant is the variant applied to the lab (see ApplyVariant), with
	// what it overwrote; nil: the lab is as deployed.
	Variant *VariantRecord `json:"variant,omitempty"`
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

// DamagedStateError is a state file that cannot be used: empty,
// truncated, not JSON, of another version, or of another lab. Destroy
// still removes what it can prove is the lab's (see Destroy).
type DamagedStateError struct {
	Lab, Path string
	Problem   string // what is wrong with it
}

func (e *DamagedStateError) Error() string {
	return fmt.Sprintf("state file of lab %s (%s) is damaged: %s; `nslab destroy --name %s` removes what carries the lab's marker, and the file", e.Lab, e.Path, e.Problem, e.Lab)
}

// loadState reads a lab's state; it returns (nil, nil) when there is none,
// and a *DamagedStateError when the file cannot be used.
func (m *Manager) loadState(labName string) (*State, error) {
	data, err := os.ReadFile(m.statePath(labName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state of lab %s: %w", labName, err)
	}
	st, problem := decodeState(data)
	if problem != "" {
		return nil, &DamagedStateError{Lab: labName, Path: m.statePath(labName), Problem: problem}
	}
	if st.Lab != labName {
		return nil, &DamagedStateError{Lab: labName, Path: m.statePath(labName), Problem: fmt.Sprintf("it is the state of lab %q", st.Lab)}
	}
	return st, nil
}

// decodeState parses a state file; problem says why it cannot be used
// ("" when it can).
func decodeState(data []byte) (st *State, problem string) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, "it is empty"
	}
	st = &State{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, "not a state nslab wrote (" + err.Error() + ")"
	}
	if st.Version != stateVersion {
		return nil, fmt.Sprintf("version %d, this nslab reads version %d", st.Version, stateVersion)
	}
	if st.Lab == "" || st.Phase == "" {
		return nil, "it lacks the lab's name or its phase"
	}
	return st, ""
}

// saveState writes the state atomically: a temporary file, written and
// synced, renamed over the old one, then the directory synced, so that a
// reader, a crash or a power cut leaves the old state or the new one,
// never half a file.
func (m *Manager) saveState(st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state of lab %s: %w", st.Lab, err)
	}
	if err := writeAtomic(m.statePath(st.Lab), data); err != nil {
		return fmt.Errorf("write state of lab %s: %w", st.Lab, err)
	}
	return nil
}

// writeAtomic replaces the file p with data (see saveState).
func writeAtomic(p string, data []byte) error {
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp) // best effort: the write's error is the one to report
		return err
	}
	dir, err := os.Open(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// removeState removes the lab's state file, and the temporary file of a
// write that a kill interrupted.
func (m *Manager) removeState(labName string) error {
	for _, p := range []string{m.statePath(labName), m.statePath(labName) + ".tmp"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove state of lab %s: %w", labName, err)
		}
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
		return l.PartOf(st.Host)
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

// LiveFile is where a bench of lab labName publishes its live stream (one
// JSON line per event, see report.LiveEvent) for nslab top, web and
// metrics to read: in the lab's directory under StateDir, which destroy
// removes with the lab.
func (m *Manager) LiveFile(labName string) string {
	return filepath.Join(m.stateDir(), labName, "bench.jsonl")
}
