package lab

import (
	"errors"
	"fmt"
	"os"

	"github.com/nslab/nslab/topology/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Running is a deployed lab, opened once: for each node its namespace and
// a netlink handle opened inside it. Whoever works on the lab (path, check,
// bench, its engines and its sampler) takes this value instead of opening
// namespaces by name again. Close releases everything.
type Running struct {
	Lab   *spec.Lab
	Dir   string // where the lab's namespaces are named (/run/netns)
	m     *Manager
	nodes map[string]*Node
	// borrowed: the nodes are another Running's (see As).
	borrowed bool
	// Differences are where the kernels differ from the file, as the
	// last Learn found them.
	Differences []Difference
}

// Node is one node of a running lab.
type Node struct {
	Name string
	// NS is the node's namespace, open. Enter it with NS.Do for what
	// follows the thread (procfs, sockets, sysfs through ns.DoSysfs).
	NS *ns.NS
	// Handle is an rtnetlink socket inside the namespace; it works from
	// any goroutine.
	Handle *netlink.Handle
}

// ErrNotPresent is wrapped by Open when a namespace of the lab is missing
// or is not the lab's.
var ErrNotPresent = errors.New("the lab is not deployed here")

// Open opens every node of lab l: it checks that each namespace exists and
// carries this lab's marker, and opens a netlink handle inside each. It
// runs in the caller's namespace. The caller closes the result.
func (m *Manager) Open(l *spec.Lab) (*Running, error) {
	r := &Running{Lab: l, Dir: m.netnsDir(), m: m, nodes: map[string]*Node{}}
	for _, n := range l.Nodes {
		node, err := m.openNode(l, n.Name)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.nodes[n.Name] = node
	}
	return r, nil
}

// openNode opens one node's namespace and handle and checks its marker.
func (m *Manager) openNode(l *spec.Lab, node string) (*Node, error) {
	name := l.Namespace(node)
	n, err := ns.Open(m.netnsDir(), name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("lab %s: namespace %s of node %s does not exist: %w", l.Name, name, node, ErrNotPresent)
		}
		return nil, err
	}
	h, err := n.NetlinkHandle()
	if err != nil {
		n.Close()
		return nil, err
	}
	lo, err := h.LinkByIndex(loIndex)
	if err != nil || lo.Attrs().Alias != nsMarker(l.Name, node) {
		h.Close()
		n.Close()
		return nil, fmt.Errorf("lab %s: namespace %s is not node %s of this lab (no marker %s): %w", l.Name, name, node, nsMarker(l.Name, node), ErrNotPresent)
	}
	return &Node{Name: node, NS: n, Handle: h}, nil
}

// Node returns the named node, or nil.
func (r *Running) Node(name string) *Node { return r.nodes[name] }

// As is r seen as version l of its lab (a variant of it applied): the
// same namespaces and handles, which r keeps and closes; As's Close does
// nothing.
func (r *Running) As(l *spec.Lab) *Running {
	return &Running{Lab: l, Dir: r.Dir, m: r.m, nodes: r.nodes, borrowed: true}
}

// Close releases every handle and namespace.
func (r *Running) Close() {
	if r.borrowed {
		return
	}
	for k, n := range r.nodes {
		n.Handle.Close()
		n.NS.Close()
		delete(r.nodes, k)
	}
}

// Link finds an interface of a node by name, through the node's handle.
func (r *Running) Link(ep spec.Endpoint) (netlink.Link, error) {
	n := r.nodes[ep.Node]
	if n == nil {
		return nil, fmt.Errorf("lab %s has no node %s", r.Lab.Name, ep.Node)
	}
	l, err := nlsafe.LinkByName(n.Handle, ep.Interface)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", ep, err)
	}
	return l, nil
}
