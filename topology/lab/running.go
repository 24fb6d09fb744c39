package lab

import (
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/spec"
)

// Running is a deployed lab opened once, as the deployer works on it: the
// read side (deployed.Opened: each node's namespace and handle, the path
// a packet takes, the routes the daemons learned) and what changes the
// lab while it runs (apply, node stop and start, impairments, links).
// Close releases everything.
type Running struct {
	*deployed.Opened
	m *Manager
}

// ErrNotPresent is wrapped by Open when a namespace of the lab is missing
// or is not the lab's.
var ErrNotPresent = deployed.ErrNotPresent

// Store is where this manager's labs are, for reading them
// (package deployed).
func (m *Manager) Store() *deployed.Store {
	return &deployed.Store{NetnsDir: m.NetnsDir, StateDir: m.StateDir, Rootless: m.Rootless}
}

// Open opens every node of lab l (see deployed.Store.Open). It runs in the
// caller's namespace. The caller closes the result.
func (m *Manager) Open(l *spec.Lab) (*Running, error) {
	o, err := m.Store().Open(l)
	if err != nil {
		return nil, err
	}
	return &Running{Opened: o, m: m}, nil
}

// As is r seen as version l of its lab (a variant of it applied): the
// same namespaces and handles, which r keeps and closes; As's Close does
// nothing.
func (r *Running) As(l *spec.Lab) *Running { return &Running{Opened: r.Opened.As(l), m: r.m} }
