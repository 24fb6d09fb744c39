package account

import (
	"fmt"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/walk"
)

// Placement is where a run's parts are on the machine's CPUs: the sender
// threads, each placed node on the path, and nslab's own sampler.
type Placement struct {
	Roles   map[int][]string // CPU -> what runs there ("sender ns1", "router ns2")
	ByNode  map[string]spec.CPUSet
	NAPI    map[string]bool // nodes whose receive work runs in pinned napi kthreads
	Sender  spec.CPUSet     // the sender threads' CPUs; empty: not pinned
	Sampler int             // the sampler's CPU; -1: not pinned
	Note    string          // where the sampler is, and why
}

// PlacementOf reads the placement of traffic t along path from the lab,
// and picks a CPU for the sampler off the CPUs it measures, where the
// machine has one.
func PlacementOf(l *spec.Lab, path *walk.Path, t *spec.Traffic, allowed spec.CPUSet) Placement {
	p := Placement{Roles: map[int][]string{}, ByNode: map[string]spec.CPUSet{}, NAPI: map[string]bool{}, Sender: t.CPUs, Sampler: -1}
	for _, c := range t.CPUs {
		p.Roles[c] = append(p.Roles[c], "sender "+t.From.Node)
	}
	for i, h := range path.Hops {
		n := l.Node(h.Node)
		if i == 0 || n == nil || !n.Placed() {
			continue
		}
		role := hopRole(path, i)
		p.ByNode[h.Node] = n.CPUs
		// Its receive work runs in pinned napi kthreads, which a full
		// NAPI ring shows: receive: napi, or an XDP fast path on a placed
		// node (topology/lab threads its NAPI).
		p.NAPI[h.Node] = n.Placed() && (n.Receive == spec.ReceiveNAPI || n.Forwarding.FastPath == spec.FastPathXDP)
		for _, c := range n.CPUs {
			p.Roles[c] = append(p.Roles[c], role+" "+h.Node)
		}
	}
	p.pickSampler(allowed)
	return p
}

// hopRole is what the node of hop i (not the sender) does on path.
func hopRole(path *walk.Path, i int) string {
	switch {
	case i == len(path.Hops)-1:
		return "receiver"
	case path.Hops[i].L2:
		return "switch"
	}
	return "router"
}

// HostRoles is what lab l (a whole lab that spans hosts) places of path
// on the CPUs of host, another host than the sender's: each node of the
// path there that has CPUs of its own, by CPU ("router r1").
func HostRoles(l *spec.Lab, path *walk.Path, host string) map[int][]string {
	roles := map[int][]string{}
	for i, h := range path.Hops {
		n := l.Node(h.Node)
		if i == 0 || n == nil || n.Host != host || !n.Placed() {
			continue
		}
		for _, c := range n.CPUs {
			roles[c] = append(roles[c], hopRole(path, i)+" "+h.Node)
		}
	}
	return roles
}

// pickSampler puts the sampler on an allowed CPU where nothing measured
// runs; failing that, with the sender (whose rate it then slows, rather
// than the node under test); failing that, nowhere in particular.
func (p *Placement) pickSampler(allowed spec.CPUSet) {
	for _, c := range allowed {
		if len(p.Roles[c]) == 0 && len(p.Roles) > 0 {
			p.Sampler, p.Note = c, fmt.Sprintf("nslab's sampler ran on cpu%d, where nothing it measures runs", c)
			break
		}
	}
	if p.Sampler < 0 && len(p.Sender) > 0 && allowed.Contains(p.Sender[0]) {
		p.Sampler = p.Sender[0]
		p.Note = fmt.Sprintf("nslab's sampler shared cpu%d with the sender: every allowed CPU (%s) runs something it measures", p.Sampler, allowed)
	}
	if p.Sampler < 0 {
		p.Note = "nslab's sampler was not pinned (no placement in the lab)"
		return
	}
	p.Roles[p.Sampler] = append(p.Roles[p.Sampler], "nslab sampler")
}

// Label puts the placement's roles on the per-CPU table.
func (p Placement) Label(cpus []report.CPUUse) {
	for i := range cpus {
		cpus[i].Roles = p.Roles[cpus[i].N]
	}
}
