// Package deployed is the read side of a deployed lab: where this
// machine's labs are (Store), a lab opened once (Opened: each node's
// namespace and netlink handle), finding a node by name, whose a named
// namespace is, the path a packet takes as the file and the kernels say,
// what the routing daemons learned, the lab's processes, and inspect's
// reading of a lab. It changes nothing on the machine (RunIn runs what its
// caller asks, in a node); the deployer (package lab) builds on it. Its
// functions run in the caller's namespace unless they say otherwise.
package deployed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
)

// DefaultStateDir is where state files live unless a Store says otherwise.
const DefaultStateDir = "/run/nslab"

// Store is where this machine's deployed labs are: the directory of named
// namespaces and that of state files.
type Store struct {
	NetnsDir string // named namespaces; "": ns.DefaultDir (/run/netns)
	StateDir string // state files; "": DefaultStateDir
	// Rootless: the labs are the user's rootless ones (a lab deployed by
	// root is not among them).
	Rootless bool
}

// NetnsDirOrDefault is where the named namespaces are.
func (m *Store) NetnsDirOrDefault() string {
	if m.NetnsDir != "" {
		return m.NetnsDir
	}
	return ns.DefaultDir
}

// StateDirOrDefault is where the state files are.
func (m *Store) StateDirOrDefault() string {
	if m.StateDir != "" {
		return m.StateDir
	}
	return DefaultStateDir
}

// ErrNotDeployed is returned for a lab that has no state file.
var ErrNotDeployed = errors.New("lab is not deployed")

// MarkerPrefix starts every ifalias nslab sets.
const MarkerPrefix = "nslab:"

// NSMarker is the ifalias of a lab namespace's loopback: what proves the
// namespace is that node of that lab.
func NSMarker(labName, node string) string { return MarkerPrefix + labName + ":" + node }

// LoIndex is the ifindex of a namespace's loopback.
const LoIndex = 1

// LoadState reads a lab's state; it returns (nil, nil) when there is none,
// and a *state.DamagedStateError when the file cannot be used.
func (m *Store) LoadState(labName string) (*state.State, error) {
	return state.Load(m.StateDirOrDefault(), labName)
}

// StateLabs lists the labs that have a state file.
func (m *Store) StateLabs() ([]string, error) { return state.Labs(m.StateDirOrDefault()) }

// Recorded is the state of deployed lab labName; an error wrapping
// ErrNotDeployed when it has none.
func (m *Store) Recorded(labName string) (*state.State, error) {
	st, err := m.LoadState(labName)
	if err == nil && st == nil {
		err = fmt.Errorf("lab %s: %w here (no state file in %s): deploy it first (nslab deploy FILE), or see the labs deployed with nslab inspect", labName, ErrNotDeployed, m.StateDirOrDefault())
	}
	return st, err
}

// LabViews is lab labName's directory of views.
func (m *Store) LabViews(labName string) string {
	return filepath.Join(m.StateDirOrDefault(), "views", labName)
}

// ErrViewGone: a deployed node's view (its mount and UTS namespaces) is
// no longer held where deploy held it. Its processes keep the files they
// have, but nothing started now reaches them (a routing daemon's socket).
var ErrViewGone = errors.New("view is gone")

// OpenView opens node's view in lab labName, deployed. Every node of a
// deployed lab has one: a view that is gone (a reboot of the mount
// namespace that held it, an unmount by hand) is an error wrapping
// ErrViewGone, never a run outside it.
func (m *Store) OpenView(labName, nsName string) (*ns.View, error) {
	v, err := ns.OpenView(m.LabViews(labName), nsName)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &ViewGoneError{Lab: labName, Namespace: nsName, Dir: m.LabViews(labName)}
	}
	return v, err
}

// ViewGoneError: namespace Namespace of lab Lab has no view in Dir. It
// wraps ErrViewGone.
type ViewGoneError struct{ Lab, Namespace, Dir string }

func (e *ViewGoneError) Error() string {
	return fmt.Sprintf("namespace %s: its view is gone (it was held in %s): the lab must be destroyed and deployed again", e.Namespace, e.Dir)
}

func (e *ViewGoneError) Unwrap() error { return ErrViewGone }

// LabToDestroy is the lab to destroy before deploying it again.
func (e *ViewGoneError) LabToDestroy() string { return e.Lab }
