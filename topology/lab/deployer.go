package lab

import (
	"context"
	"fmt"
	"sync"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/cgroup"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// deployer carries what a deploy has opened and created. Each node's
// namespace has one netlink handle, opened inside it when it was created;
// every link, address and route operation goes through that handle and so
// happens in the node's namespace, from whatever goroutine.
type deployer struct {
	ctx     context.Context // the deploy's: one-shot commands are killed when it ends
	m       *Manager
	lab     *spec.Lab
	st      *state.State // the state file's contents, saved ahead of host changes
	creator *ns.Creator
	proc    *ns.ProcWriter             // writes /proc/sys (see ns.ProcWriter), from setUpNamespace and node settings
	views   viewQueue                  // makes the nodes' views (see step_view.go)
	cgroups *cgroup.Hierarchy          // the host's, found at first use (limits:)
	hosts   string                     // the lab's hosts file, shared by the views, once written
	inodes  map[string]uint64          // node -> its namespace's inode, for the state
	handles map[string]*netlink.Handle // node -> rtnetlink handle inside it
	index   map[spec.Endpoint]int      // interface or bridge -> ifindex in its node
	created []string                   // namespace names, in creation order
	// nsAhead are the nodes whose namespaces the run makes: the first
	// namespace step makes them all (see createNamespace), and nsMade
	// holds each one's result.
	nsAhead  []*spec.Node
	nsMade   map[string]error
	nsReady  map[string]chan struct{} // closed when the node's namespace is made
	aheadAt  int                      // the step before which startAhead runs
	services []*waited                // services started, to check they keep running
	warnMu   sync.Mutex
	warnings []string // what the deploy went on past (see warn)
}

// warn records what the deploy went on past, for its result.
func (d *deployer) warn(format string, args ...any) {
	d.warnMu.Lock()
	defer d.warnMu.Unlock()
	d.warnings = append(d.warnings, fmt.Sprintf(format, args...))
}

// inNS runs fn with node's namespace open, and closes it: a deploy keeps
// one file open per node (its netlink handle), not two, so a lab of
// 10,000 nodes fits the usual limit of 20,000 open files. Opening a
// namespace by name is one open(2) of its /run/netns file.
func (d *deployer) inNS(node string, fn func(*ns.NS) error) error {
	n, err := ns.Open(d.m.netnsDir(), d.lab.Namespace(node))
	if err != nil {
		return fmt.Errorf("open the namespace of %s: %w", node, err)
	}
	defer n.Close()
	return fn(n)
}

// inNode runs fn with node's namespace and view open (the view nil for a
// lab without views), and closes them.
func (d *deployer) inNode(node string, fn func(*ns.NS, *ns.View) error) error {
	return d.inNS(node, func(x *ns.NS) error {
		v, err := d.m.openView(d.lab.Name, x.Name)
		if err != nil {
			return err
		}
		defer v.Close()
		return fn(x, v)
	})
}

// procWriter is the deploy's writer of /proc/sys, started at first use.
func (d *deployer) procWriter() *ns.ProcWriter {
	if d.proc == nil {
		d.proc = ns.NewProcWriter()
	}
	return d.proc
}

func (d *deployer) close() {
	if d.creator != nil {
		d.creator.Close()
		d.creator = nil
	}
	if d.proc != nil {
		d.proc.Close()
		d.proc = nil
	}
	d.views.close()
	for k, h := range d.handles {
		h.Close()
		delete(d.handles, k)
	}
	clear(d.inodes)
}

// link returns a netlink link value for an interface of the lab.
func (d *deployer) link(node, name string) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: d.ifindex(node, name), Name: name}}
}

// ifindex is the index of interface name in node: the one this deploy
// created it with, or, for one it found there (apply), the kernel's (0
// when it has none).
func (d *deployer) ifindex(node, name string) int {
	ep := spec.Endpoint{Node: node, Interface: name}
	if i, ok := d.index[ep]; ok || name == "" {
		return i
	}
	if h := d.handles[node]; h != nil {
		if l, err := nlsafe.LinkByName(h, name); err == nil {
			d.index[ep] = l.Attrs().Index
		}
	}
	return d.index[ep]
}

// expect tells the deployer the steps it will run, so that it makes what
// can be made at once together (the namespaces: see createNamespace), and
// the steps that may start ahead start with the first namespace step
// (aheadAt), each waiting for its node's namespace (nsReady).
func (d *deployer) expect(steps []Step) {
	d.nsAhead, d.aheadAt, d.nsReady = nil, 0, map[string]chan struct{}{}
	first := true
	for i, s := range steps {
		if s.IsNamespace() {
			if n := d.lab.Node(s.Makes[0]); n != nil {
				d.nsAhead = append(d.nsAhead, n)
				d.nsReady[n.Name] = make(chan struct{})
			}
			if first {
				d.aheadAt, first = i, false
			}
		}
	}
}

// made says node's namespace exists: what waits for it may go.
func (d *deployer) made(node string) {
	if ch, ok := d.nsReady[node]; ok {
		close(ch)
		delete(d.nsReady, node)
	}
}

// startAhead starts the background work of steps that have some (the
// nodes' views, on the view maker's thread while the main one makes the
// links), in their order.
func (d *deployer) startAhead(steps []Step) {
	for _, s := range steps {
		if s.Ahead != nil {
			s.Ahead(d)
		}
	}
	d.views.launch(d)
}
