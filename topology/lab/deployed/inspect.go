package deployed

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// Reading a deployed lab: the Store opens each node of the state and
// has package inspect read it (its interfaces, routes, rules, queues,
// nftables table, daemons and limits).

// List returns every lab with a state file or a marked namespace.
func (m *Store) List() ([]inspect.Summary, error) {
	labs, err := m.AllLabs()
	if err != nil {
		return nil, err
	}
	var out []inspect.Summary
	for _, l := range labs {
		st, err := m.LoadState(l)
		if err != nil {
			return nil, err
		}
		if st == nil {
			found, _ := m.ScanOwned(l)
			out = append(out, inspect.Summary{Lab: l, Phase: "orphaned (no state file)", Nodes: len(found[l])})
			continue
		}
		phase := st.Phase
		if phase == state.PhaseDeploying && !state.Alive(st.PID) {
			phase = "interrupted"
		}
		out = append(out, inspect.Summary{Lab: l, File: st.File, SHA256: st.SHA256, Owner: st.Owner, Phase: phase, Nodes: len(st.Namespaces), Deployed: st.Deployed})
	}
	return out, nil
}

// Inspect reads a deployed lab back from the kernel: each node's interfaces
// (kind, veth peer, MAC, addresses, MTU, oper state) and routes. It works
// from the state file, so the topology file need not exist.
func (m *Store) Inspect(labName string) (*inspect.LabInfo, error) {
	st, err := m.LoadState(labName)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("lab %s: %w here (no state file in %s): deploy it first (nslab deploy FILE), or list the labs deployed here with nslab inspect", labName, ErrNotDeployed, m.StateDirOrDefault())
	}
	l, err := st.Spec()
	if err != nil {
		return nil, err
	}
	info := &inspect.LabInfo{Lab: st.Lab, File: st.File, SHA256: st.SHA256, Owner: st.Owner, Phase: st.Phase, Deployed: st.Deployed}
	for _, s := range st.Services {
		if s.Index < 0 {
			continue // a node's routing daemons: see inspect.NodeInfo.Routing
		}
		info.Services = append(info.Services, inspect.ServiceInfo{ServiceRecord: s, Running: s.PID > 0 && Alive(s.PID, s.Start)})
	}
	// Peer names from the file; each is checked against the kernel below.
	peers := map[spec.Endpoint]spec.Endpoint{}
	for _, lk := range l.Links {
		peers[lk.A], peers[lk.B] = lk.B, lk.A
	}
	indexes := map[spec.Endpoint]int{}
	for _, rec := range st.Namespaces {
		ni := inspect.NodeInfo{Node: rec.Node, Namespace: rec.Name}
		if err := m.inspectNode(&ni, l, indexes); err != nil {
			ni.Error = err.Error()
		}
		if ni.Present && ni.Error == "" {
			m.inspectView(&ni, st.Lab, l.Node(rec.Node))
		}
		ni.Limits = inspect.ReadLimits(st, rec.Node, st.Started)
		ni.StoppedSince, ni.Stopped = st.StoppedAt(rec.Node)
		for i := range st.Placement {
			if st.Placement[i].Node == rec.Node {
				ni.Placement = &st.Placement[i]
			}
		}
		info.Nodes = append(info.Nodes, ni)
	}
	for i := range info.Nodes {
		n := &info.Nodes[i]
		for j := range n.Interfaces {
			ifc := &n.Interfaces[j]
			ep := spec.Endpoint{Node: n.Node, Interface: ifc.Name}
			if ifc.Kind == "vxlan" {
				ifc.Peer = inspect.TunnelPeer(l, ep, ifc.Peer)
			}
			if ifc.Kind != "veth" {
				continue
			}
			if p, ok := peers[ep]; ok && indexes[p] == inspect.PeerIndex(ifc) {
				ifc.Peer = p.String()
			}
		}
	}
	return info, nil
}

// inspectNode fills ni from the namespace, after checking it is the lab's.
func (m *Store) inspectNode(ni *inspect.NodeInfo, l *spec.Lab, indexes map[spec.Endpoint]int) error {
	node, err := m.OpenLabNode(l, ni.Node)
	if err != nil {
		return err
	}
	defer node.NS.Close()
	defer node.Handle.Close()
	h := node.Handle
	ni.Present = true
	links, err := nlsafe.LinkList(h)
	if err != nil {
		return fmt.Errorf("list links in %s: %w", ni.Namespace, err)
	}
	names := map[int]string{}
	for _, lk := range links {
		names[lk.Attrs().Index] = lk.Attrs().Name
	}
	for _, lk := range links {
		ifc, err := inspect.LinkInfo(h, lk, names)
		if err != nil {
			return fmt.Errorf("%w in %s", err, ni.Namespace)
		}
		indexes[spec.Endpoint{Node: ni.Node, Interface: ifc.Name}] = lk.Attrs().Index
		if n := l.Node(ni.Node); n != nil {
			if fi := n.Interface(ifc.Name); fi != nil {
				ifc.NAPISet = fi.NAPI != nil
				if fi.NAPI != nil && fi.NAPI.BusyPoll != nil {
					ifc.BusyPoll = fi.NAPI.BusyPoll.String()
				}
				for _, k := range spec.OffloadNames {
					if _, ok := fi.Offloads[k]; ok {
						ifc.OffloadsSet = append(ifc.OffloadsSet, k)
					}
				}
			}
		}
		ni.Interfaces = append(ni.Interfaces, ifc)
	}
	if err := inspect.ReadNodeSysfs(node.NS, ni); err != nil {
		return err
	}
	if ni.FastPath, err = inspect.ReadFastPath(links); err != nil {
		return fmt.Errorf("%w in %s", err, ni.Namespace)
	}
	if err := inspect.ReadNetfilter(node.NS, l, ni); err != nil {
		return err
	}
	return inspect.ReadRouting(h, ni, names)
}

// inspectView says whether the node's view is held, and when it is,
// reads its routing daemons (n nil: none).
func (m *Store) inspectView(ni *inspect.NodeInfo, labName string, n *spec.Node) {
	v, err := m.OpenView(labName, ni.Namespace)
	if err != nil {
		ni.ViewGone = err.Error()
		return
	}
	v.Close()
	if n != nil {
		ni.Routing = m.inspectRouting(labName, n, ni.Namespace)
	}
}

// inspectRouting reads node n's daemons, from inside its namespace and view.
func (m *Store) inspectRouting(labName string, n *spec.Node, nsName string) *inspect.RoutingInfo {
	var ri *inspect.RoutingInfo
	var want []string
	switch {
	case n.FRR != nil:
		ri, want = &inspect.RoutingInfo{Suite: "frr"}, FRRDaemons(n.FRR)
	case n.BIRD != nil:
		ri, want = &inspect.RoutingInfo{Suite: "bird"}, []string{"bird"}
	default:
		return nil
	}
	running := markedBy(labName + "/" + n.Name + "/" + ri.Suite)
	for _, d := range want {
		pid, ok := running[d]
		ri.Daemons = append(ri.Daemons, inspect.DaemonInfo{Name: d, Running: ok, PID: pid})
	}
	x, err := ns.Open(m.NetnsDirOrDefault(), nsName)
	if err != nil {
		ri.Error = err.Error()
		return ri
	}
	defer x.Close()
	v, err := m.OpenView(labName, nsName)
	if err != nil {
		ri.Error = err.Error()
		return ri
	}
	defer v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	query := func(argv ...string) ([]byte, error) { return RunIn(ctx, x, v, "", argv...) }
	if ri.Suite == "frr" {
		ri.Sessions, err = inspect.FRRSessions(query, n.FRR)
	} else {
		ri.Sessions, err = inspect.BIRDSessions(query, BIRDCtl)
	}
	if err != nil {
		ri.Error = err.Error()
	}
	return ri
}

// markedBy maps the command names of the processes whose service mark is
// tag to their pids.
func markedBy(tag string) map[string]int {
	out := map[string]int{}
	for _, pid := range Marked(func(mark string) bool { return mark == tag }) {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			out[strings.TrimSpace(string(comm))] = pid
		}
	}
	return out
}
