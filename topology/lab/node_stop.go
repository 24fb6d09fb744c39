package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/spec"
)

// Stopping and starting a node, as a router fails and comes back: its
// links go down at both ends (as pulled cables: the kernels on both sides
// drop the routes through them), and every process in it stops (its
// services and routing daemons, and anything else running in its
// namespace); its objects (interfaces, addresses, the file's routes on
// interfaces that stay, netfilter, its view and cgroup) stay. Start
// brings the links up at both ends (an end whose node is stopped too
// stays down), puts the file's routes through them back on both sides,
// and starts its routing daemons and services again as deploy did, with
// their configuration from its view. exec: lines do not run again: what
// they made is still there.

// StopNode stops node of the running lab: the state records it first (a
// stop killed half way is finished by StartNode), then its links go down
// at both ends, then its processes stop (SIGTERM, SIGKILL after 3 s).
// It runs in the caller's namespace, each change through a node's handle.
//
// Equivalent to: ip -n NS link set IF down (each, and each peer); ip netns pids NS | xargs kill
func (r *Running) StopNode(node string) error {
	n, st, unlock, err := r.lockNode(node)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := st.StoppedAt(node); ok {
		return fmt.Errorf("node %s of lab %s is stopped already (nslab node start %s)", node, r.Lab.Name, node)
	}
	now := time.Now()
	var again []state.ServiceRecord // the startup scripts' services running now
	for _, s := range st.Services {
		if s.Node == node && s.Service != "" && deployed.Alive(s.PID, s.Start) {
			again = append(again, s)
		}
	}
	st.Stopped = append(st.Stopped, state.StoppedNode{Node: node, Since: now, Services: again})
	st.LastChange = &state.LabChange{What: "node " + node + " stopped", At: now}
	if err := r.m.saveState(st); err != nil {
		return err
	}
	var errs []error
	for _, ep := range r.nodeEnds(n) {
		errs = append(errs, r.SetLink(ep, false))
	}
	errs = append(errs, r.stopProcesses(st, node))
	st.Services = slices.DeleteFunc(st.Services, func(s state.ServiceRecord) bool { return s.Node == node })
	errs = append(errs, r.m.saveState(st))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop node %s: %w", node, err)
	}
	return nil
}

// StartNode starts node, stopped by StopNode, again: its links up at both
// ends (but towards nodes stopped too), the file's routes through them
// back, then its routing daemons (waited for until they answer) and
// services (checked to keep running). The state forgets the stop when
// all of it worked; else the node stays stopped, and StartNode may be
// run again.
func (r *Running) StartNode(ctx context.Context, node string) error {
	n, st, unlock, err := r.lockNode(node)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := st.StoppedAt(node); !ok {
		return fmt.Errorf("node %s of lab %s is not stopped", node, r.Lab.Name)
	}
	var again []state.ServiceRecord
	for _, s := range st.Stopped {
		if s.Node == node {
			again = s.Services
		}
	}
	began := time.Now() // the links come up: what convergence counts from
	if err := r.linksUp(st, n); err != nil {
		return fmt.Errorf("start node %s: %w", node, err)
	}
	d := &deployer{ctx: ctx, m: r.m, lab: r.Lab, st: st}
	defer d.close()
	if err := d.startProcesses(n, again); err != nil {
		return fmt.Errorf("start node %s: %w (it stays stopped: stop what started with nslab node stop, or run start again)", node, err)
	}
	st.Stopped = slices.DeleteFunc(st.Stopped, func(s state.StoppedNode) bool { return s.Node == node })
	st.LastChange = &state.LabChange{What: "node " + node + " started", At: began}
	return r.m.saveState(st)
}

// lockNode takes the state lock for a change to node, and returns the
// node, the lab's state read under the lock, and the unlock.
func (r *Running) lockNode(node string) (*spec.Node, *state.State, func(), error) {
	n, err := r.localNode(node)
	if err != nil {
		return nil, nil, nil, err
	}
	unlock, err := r.m.lock()
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := r.m.Recorded(r.Lab.Name)
	if err != nil {
		unlock()
		return nil, nil, nil, err
	}
	return n, st, unlock, nil
}

// localNode is node of r's lab, on this host.
func (r *Running) localNode(node string) (*spec.Node, error) {
	n := r.Lab.Node(node)
	if n == nil || r.Node(node) == nil {
		return nil, fmt.Errorf("lab %s has no node %s here", r.Lab.Name, node)
	}
	if n.Segment {
		return nil, fmt.Errorf("%s is a segment (a switch), not a node: stop the nodes on it, or take its ports down with nslab link down", node)
	}
	return n, nil
}

// nodeEnds are the ends of n's links: its own interfaces (lo aside), then
// the other end of each of its veth links on this host.
func (r *Running) nodeEnds(n *spec.Node) []spec.Endpoint {
	var own, peers []spec.Endpoint
	for _, i := range n.Interfaces {
		if i.Kind == spec.KindLoopback {
			continue
		}
		own = append(own, spec.Endpoint{Node: n.Name, Interface: i.Name})
		if i.Peer.Node != "" && r.Node(i.Peer.Node) != nil && r.Lab.Node(i.Peer.Node).Interface(i.Peer.Interface) != nil {
			peers = append(peers, i.Peer)
		}
	}
	return append(own, peers...)
}

// linksUp brings n's links up at both ends, but those whose other node
// is stopped (st), and puts the file's routes through them back.
func (r *Running) linksUp(st *state.State, n *spec.Node) error {
	var ends []spec.Endpoint
	for _, ep := range r.nodeEnds(n) {
		if _, stopped := st.StoppedAt(ep.Node); ep.Node != n.Name && stopped {
			continue
		}
		link, err := r.Link(ep)
		if err != nil {
			return err
		}
		// Both ends up before SetLink waits for each to be up.
		if err := r.Node(ep.Node).Handle.LinkSetUp(link); err != nil {
			return fmt.Errorf("set %s up: %w", ep, err)
		}
		ends = append(ends, ep)
	}
	for _, ep := range ends {
		peer := r.Lab.Node(ep.Node).Interface(ep.Interface).Peer
		if _, stopped := st.StoppedAt(peer.Node); stopped && peer.Node != n.Name {
			continue // its carrier stays off: nothing to wait for
		}
		if err := r.SetLink(ep, true); err != nil {
			return err
		}
	}
	return nil
}

// stopProcesses stops every process of node: those with its service mark
// (its services and daemons, and what they started), those st records,
// and any other in its network namespace (a shell of nslab exec) but
// this process.
func (r *Running) stopProcesses(st *state.State, node string) error {
	procs := markedWith(r.Lab.Name + "/" + node + "/")
	for _, s := range st.Services {
		if s.Node == node && s.PID > 0 && deployed.Alive(s.PID, s.Start) {
			procs[s.PID] = s.Start
		}
	}
	ino, err := r.Node(node).NS.Inode()
	if err != nil {
		return err
	}
	for pid, start := range inNamespace(ino) {
		procs[pid] = start
	}
	_ = stopAll(procs) // what is left is checked below
	var left []string
	for pid, start := range procs {
		if deployed.Alive(pid, start) {
			left = append(left, strconv.Itoa(pid))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("processes of node %s still running after SIGKILL: pid %s", node, strings.Join(left, ", "))
	}
	return nil
}

// inNamespace lists the processes whose network namespace has inode ino,
// but this one, with their start times.
func inNamespace(ino uint64) map[int]uint64 {
	out := map[int]uint64{}
	for _, p := range hostProcesses() {
		if p.netns == ino {
			out[p.pid] = p.start
		}
	}
	return out
}

// startProcesses starts node n's routing daemons and services as deploy
// does (those of its run: lines and exec: service lines, and again those
// of its startup scripts' lines that were running when it stopped), and
// checks that the services keep running: one that exits at once is an
// error, whatever line asked for it.
func (d *deployer) startProcesses(n *spec.Node, again []state.ServiceRecord) error {
	if n.FRR != nil {
		if err := d.startFRR(n, deployed.FRRDaemons(n.FRR)); err != nil {
			return err
		}
	}
	if n.BIRD != nil {
		if err := d.startBIRD(n); err != nil {
			return err
		}
	}
	for i, c := range n.Run {
		if err := d.startService(n, i, c); err != nil {
			return err
		}
	}
	for _, i := range slices.Sorted(maps.Keys(n.ServiceLines)) {
		if err := d.startExecService(n, i, n.ServiceLines[i]); err != nil {
			return err
		}
	}
	for _, s := range again {
		if err := d.startScriptService(n, s.Script, s.Asked, askedService{name: s.Service}); err != nil {
			return err
		}
	}
	if len(d.services) > 0 {
		return d.checkServices()
	}
	return nil
}

// StopNode stops node of deployed lab labName (see Running.StopNode).
func (m *Manager) StopNode(labName, node string) error {
	r, err := m.OpenDeployed(labName)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.StopNode(node)
}

// StartNode starts node of deployed lab labName again (see
// Running.StartNode).
func (m *Manager) StartNode(ctx context.Context, labName, node string) error {
	r, err := m.OpenDeployed(labName)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.StartNode(ctx, node)
}

// OpenDeployed opens deployed lab labName as its state records it (this
// host's part).
func (m *Manager) OpenDeployed(labName string) (*Running, error) {
	st, err := m.Recorded(labName)
	if err != nil {
		return nil, err
	}
	if st.Phase != state.PhaseDeployed {
		return nil, fmt.Errorf("lab %s is %s, not deployed", labName, st.Phase)
	}
	l, err := st.Spec()
	if err != nil {
		return nil, err
	}
	return m.Open(l)
}
