package deployed

import (
	"errors"
	"fmt"
	"os"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Opened is a deployed lab, opened once: for each node its namespace and
// a netlink handle opened inside it. Whoever reads the lab (path, check,
// the sampler) takes this value instead of opening namespaces by name
// again; the deployer's lab.Running is this and what changes the lab.
// Close releases everything.
type Opened struct {
	Lab   *spec.Lab
	Dir   string // where the lab's namespaces are named (/run/netns)
	m     *Store
	nodes map[string]*Node
	// borrowed: the nodes are another Opened's (see As).
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
func (m *Store) Open(l *spec.Lab) (*Opened, error) {
	r := &Opened{Lab: l, Dir: m.NetnsDirOrDefault(), m: m, nodes: map[string]*Node{}}
	for _, n := range l.Nodes {
		node, err := m.OpenLabNode(l, n.Name)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.nodes[n.Name] = node
	}
	return r, nil
}

// OpenLabNode opens one node's namespace and handle and checks its marker.
func (m *Store) OpenLabNode(l *spec.Lab, node string) (*Node, error) {
	name := l.Namespace(node)
	n, err := ns.Open(m.NetnsDirOrDefault(), name)
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
	lo, err := h.LinkByIndex(LoIndex)
	if err != nil || lo.Attrs().Alias != NSMarker(l.Name, node) {
		h.Close()
		n.Close()
		return nil, fmt.Errorf("lab %s: namespace %s is not node %s of this lab (no marker %s): %w", l.Name, name, node, NSMarker(l.Name, node), ErrNotPresent)
	}
	return &Node{Name: node, NS: n, Handle: h}, nil
}

// Node returns the named node, or nil.
func (r *Opened) Node(name string) *Node { return r.nodes[name] }

// As is r seen as version l of its lab (a variant of it applied): the
// same namespaces and handles, which r keeps and closes; As's Close does
// nothing.
func (r *Opened) As(l *spec.Lab) *Opened {
	return &Opened{Lab: l, Dir: r.Dir, m: r.m, nodes: r.nodes, borrowed: true}
}

// Close releases every handle and namespace.
func (r *Opened) Close() {
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
func (r *Opened) Link(ep spec.Endpoint) (netlink.Link, error) {
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

// File is the lab's file (its variant's, for an Opened seen As one).
func (r *Opened) File() *spec.Lab { return r.Lab }

// Handle is node's netlink handle (nil: no such node here).
func (r *Opened) Handle(node string) *netlink.Handle {
	if n := r.nodes[node]; n != nil {
		return n.Handle
	}
	return nil
}

// Do runs fn on a thread in node's namespace (an error: no such node
// here).
func (r *Opened) Do(node string, fn func() error) error {
	n := r.nodes[node]
	if n == nil {
		return fmt.Errorf("lab %s has no node %s on this host", r.Lab.Name, node)
	}
	return n.NS.Do(fn)
}
