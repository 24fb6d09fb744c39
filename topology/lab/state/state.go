// Package state is a deployed lab's record on disk, StateDir/LAB.json:
// what nslab made and changed (namespaces, host changes, services,
// tunnels, cgroups, a variant, an apply under way), each written ahead
// of the change it records, so that destroy, inspect and a second apply
// find everything a killed run left. It reads and writes the file and
// nothing else: it changes nothing on the machine.
package state

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
	"github.com/nslab/nslab/topology/sriov"
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
	Version int    `json:"version"`
	Lab     string `json:"lab"`
	File    string `json:"file"`   // absolute path at deploy time
	SHA256  string `json:"sha256"` // of the file's contents
	Source  string `json:"source"` // the file's contents as deployed
	// Owner is who deployed the lab when something other than a person
	// did ("kubernetes Lab ns1/foo uid ..." for a Kubernetes agent's
	// share); "": a person or a coordinator over SSH. A destroy for
	// another owner leaves the lab alone (lab.Manager.Owner).
	Owner string `json:"owner,omitempty"`
	// Prefix is the namespace prefix the lab was deployed with, when not
	// its file's (nslab --prefix); "": the file's.
	Prefix     string     `json:"prefix,omitempty"`
	Phase      string     `json:"phase"`
	PID        int        `json:"pid"`
	Started    time.Time  `json:"started"`
	Deployed   time.Time  `json:"deployed,omitzero"`
	Namespaces []NSRecord `json:"namespaces"`
	SRIOV      []PFRecord `json:"sriov,omitempty"` // host changes, recorded before they are made
	// Machine are the machine-wide sysctls the lab set, each with the
	// value it had, recorded before it is written.
	Machine []MachineRecord `json:"machine,omitempty"`
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

// MachineRecord is one machine-wide sysctl a lab set: its key (dotted),
// the value it had before and the lab's.
type MachineRecord struct {
	Key   string `json:"key"`
	Was   string `json:"was"`
	Value string `json:"value"`
}

// PFRecord is what a deploy changed on one PF, written before the change.
type PFRecord struct {
	PF         string     `json:"pf"`
	OrigNumVFs int        `json:"orig_numvfs"`
	SetNumVFs  int        `json:"set_numvfs,omitempty"` // 0: sriov_numvfs was left alone
	VFs        []VFRecord `json:"vfs"`
}

// VFRecord is one VF handed to a node.
type VFRecord struct {
	Index    int              `json:"index"`
	PCI      string           `json:"pci"`       // finds the netdev whatever its name
	OrigName string           `json:"orig_name"` // its name in the host
	Node     string           `json:"node"`
	NS       string           `json:"namespace"`
	Name     string           `json:"name"` // its name in the node
	OrigMTU  int              `json:"orig_mtu,omitempty"`
	OrigAddr string           `json:"orig_hwaddr,omitempty"` // the netdev's own MAC
	Orig     sriov.VFSettings `json:"orig"`
	Set      bool             `json:"set,omitempty"`   // PF-side settings were (about to be) changed
	Moved    bool             `json:"moved,omitempty"` // the netdev was (about to be) moved into the node
}

// ServiceRecord is one service of a lab, written to the state before the
// program starts and again once it runs.
type ServiceRecord struct {
	Node    string `json:"node"`
	Index   int    `json:"index"` // in the node's run: list
	Command string `json:"command"`
	Log     string `json:"log"`
	PID     int    `json:"pid,omitempty"`
	// Start is the process's start time (/proc/PID/stat, clock ticks since
	// boot): a later process that got the same pid is not the service.
	Start uint64 `json:"start_ticks,omitempty"`
	// Service is the service a line of startup script Script asked for
	// (the Asked-th it asked for), which node start starts again; "" for
	// other programs.
	Service string `json:"service,omitempty"`
	Script  int    `json:"script,omitempty"`
	Asked   int    `json:"asked,omitempty"`
}

// TunnelRecord is one VXLAN interface of a lab part.
type TunnelRecord struct {
	Node      string `json:"node"`
	Interface string `json:"interface"`
	HostName  string `json:"host_name"` // its name in the host namespace, before the move
	VNI       int    `json:"vni"`
}

// StoppedNode is a node stopped by StopNode, in the lab's state.
type StoppedNode struct {
	Node  string    `json:"node"`
	Since time.Time `json:"since"`
	// Services are the services its startup scripts' lines started that
	// were running when it stopped: node start starts them again.
	Services []ServiceRecord `json:"services,omitempty"`
}

// LabChange is a change made to a deployed lab, and when.
type LabChange struct {
	What string    `json:"what"` // "node r2 stopped"
	At   time.Time `json:"at"`
}

// ApplyRecord is an apply under way, in the lab's state.
type ApplyRecord struct {
	File    string    `json:"file"`
	SHA256  string    `json:"sha256"`
	Source  string    `json:"source"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// VariantRecord is the variant applied to a deployed lab, in its state.
type VariantRecord struct {
	Name string `json:"name"`
	// Saved holds what the variant overwrote that the lab as deployed does
	// not set, as it was before: savedKey -> value.
	Saved map[string]string `json:"saved,omitempty"`
}

// Spec re-parses the topology recorded in the state.
func (st *State) Spec() (*spec.Lab, error) {
	l, err := spec.Parse(st.File+" (as deployed)", []byte(st.Source))
	if err != nil {
		return nil, fmt.Errorf("recorded topology of lab %s: %w", st.Lab, err)
	}
	if st.Prefix != "" && st.Prefix != l.Prefix {
		if err := l.WithPrefix(st.Prefix); err != nil {
			return nil, fmt.Errorf("recorded topology of lab %s: %w", st.Lab, err)
		}
	}
	if st.Host != "" {
		return l.PartOf(st.Host)
	}
	return l, nil
}

// StoppedAt reports whether st records node as stopped, and since when.
func (st *State) StoppedAt(node string) (time.Time, bool) {
	for _, s := range st.Stopped {
		if s.Node == node {
			return s.Since, true
		}
	}
	return time.Time{}, false
}

// Version is the version of the file this nslab writes and reads.
const Version = 1

// Path is the state file of lab labName in dir.
func Path(dir, labName string) string {
	return filepath.Join(dir, labName+".json")
}

// DamagedStateError is a state file that cannot be used: empty,
// truncated, not JSON, of another version, or of another lab. Destroy
// still removes what it can prove is the lab's.
type DamagedStateError struct {
	Lab, Path string
	Problem   string // what is wrong with it
}

func (e *DamagedStateError) Error() string {
	return fmt.Sprintf("state file of lab %s (%s) is damaged: %s; destroying the lab by name removes what carries the lab's marker, and the file", e.Lab, e.Path, e.Problem)
}

// LabToDestroy is the lab whose destroy (by name) clears e; the front end
// says how its user does that.
func (e *DamagedStateError) LabToDestroy() string { return e.Lab }

// Load reads lab labName's state from dir; it returns (nil, nil) when
// there is none, and a *DamagedStateError when the file cannot be used.
func Load(dir, labName string) (*State, error) {
	p := Path(dir, labName)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state of lab %s: %w", labName, err)
	}
	st, problem := Decode(data)
	if problem != "" {
		return nil, &DamagedStateError{Lab: labName, Path: p, Problem: problem}
	}
	if st.Lab != labName {
		return nil, &DamagedStateError{Lab: labName, Path: p, Problem: fmt.Sprintf("it is the state of lab %q", st.Lab)}
	}
	return st, nil
}

// Decode parses a state file; problem says why it cannot be used ("" when
// it can).
func Decode(data []byte) (st *State, problem string) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, "it is empty"
	}
	st = &State{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, "not a state nslab wrote (" + err.Error() + ")"
	}
	if st.Version != Version {
		return nil, fmt.Sprintf("version %d, this nslab reads version %d", st.Version, Version)
	}
	if st.Lab == "" || st.Phase == "" {
		return nil, "it lacks the lab's name or its phase"
	}
	return st, ""
}

// Save writes st to dir atomically: a temporary file, written and synced,
// renamed over the old one, then the directory synced, so that a reader,
// a crash or a power cut leaves the old state or the new one, never half
// a file.
func Save(dir string, st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state of lab %s: %w", st.Lab, err)
	}
	if err := WriteAtomic(Path(dir, st.Lab), data); err != nil {
		return fmt.Errorf("write state of lab %s: %w", st.Lab, err)
	}
	return nil
}

// WriteAtomic replaces the file p with data (see Save).
func WriteAtomic(p string, data []byte) error {
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
	d, err := os.Open(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Remove removes lab labName's state file from dir, and the temporary
// file of a write that a kill interrupted.
func Remove(dir, labName string) error {
	for _, p := range []string{Path(dir, labName), Path(dir, labName) + ".tmp"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove state of lab %s: %w", labName, err)
		}
	}
	return nil
}

// Labs lists the labs that have a state file in dir, sorted.
func Labs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list labs in %s: %w", dir, err)
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

// Alive reports whether pid names a running process (the one a state
// records as deploying or applying).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
