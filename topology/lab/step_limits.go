package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nslab/nslab/internal/units"
	"github.com/nslab/nslab/topology/cgroup"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// Limits per node (limits:): a cgroup of the node's own, nslab/LAB/NODE
// under the host's cgroup hierarchy (see topology/cgroup), made after
// the node's view and before its exec: lines, so that every program nslab
// starts in the node (exec: lines, routing daemons, services, nslab exec)
// starts in it. The state records the directories before they are made;
// destroy kills what is left in them and removes them.

func limitSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		if n.Limits == nil {
			continue
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("limit node %s: %s", n.Name, describeLimits(n.Limits)),
			Shell: func() []string { return shLimits(l, n) },
			Do:    func(d *deployer) error { return d.makeCgroup(n) },
			Makes: []string{n.Name + "/cgroup"},
			Needs: []string{n.Name},
			Undo:  func(d *deployer) error { return d.removeCgroup(n.Name) },
		})
	}
	return steps
}

// describeLimits is a node's limits as the file writes them.
func describeLimits(l *spec.Limits) string {
	var parts []string
	if l.CPU > 0 {
		parts = append(parts, "cpu "+strconv.FormatFloat(l.CPU, 'f', -1, 64)+"%")
	}
	if l.Memory > 0 {
		parts = append(parts, "memory "+units.FormatBytes(l.Memory))
	}
	if l.Pids > 0 {
		parts = append(parts, fmt.Sprintf("pids %d", l.Pids))
	}
	return strings.Join(parts, ", ")
}

// cgroupLimits are n's limits as the cgroup package takes them.
func cgroupLimits(l *spec.Limits) cgroup.Limits {
	return cgroup.Limits{CPU: l.CPU, Memory: l.Memory, Pids: l.Pids}
}

// checkLimits says why the lab's limits cannot be had on this host ("" in
// a lab without limits, or when they can).
func checkLimits(l *spec.Lab) []string {
	for _, n := range l.Nodes {
		if n.Limits != nil {
			if _, err := cgroup.Find(); err != nil {
				return []string{fmt.Sprintf("nodes.%s.limits: %v", n.Name, err)}
			}
			return nil
		}
	}
	return nil
}

// hierarchy is the host's cgroup hierarchy, found at first use.
func (d *deployer) hierarchy() (*cgroup.Hierarchy, error) {
	if d.cgroups == nil {
		h, err := cgroup.Find()
		if err != nil {
			return nil, err
		}
		d.cgroups = h
	}
	return d.cgroups, nil
}

// makeCgroup makes node n's cgroup (and the lab's, the first time),
// recorded in the state before it exists, and sets n's limits.
func (d *deployer) makeCgroup(n *spec.Node) error {
	h, err := d.hierarchy()
	if err != nil {
		return err
	}
	g := h.Node(d.lab.Name, n.Name)
	if len(d.st.Cgroups) == 0 {
		d.st.Cgroups = append(d.st.Cgroups, h.Lab(d.lab.Name).Dirs()...)
	}
	d.st.Cgroups = append(d.st.Cgroups, g.Dirs()...)
	if err := d.m.saveState(d.st); err != nil {
		return err
	}
	if err := g.Make(); err != nil {
		return err
	}
	return g.Set(cgroupLimits(n.Limits))
}

// startIn starts cmd in node n: its namespace, its view, and its cgroup
// when it has limits.
func (d *deployer) startIn(n *spec.Node, cmd *exec.Cmd) error {
	var join func() error
	if n.Limits != nil {
		h, err := d.hierarchy()
		if err != nil {
			return err
		}
		j, done, err := h.Node(d.lab.Name, n.Name).Prepare(cmd)
		if err != nil {
			return err
		}
		defer done()
		join = j
	}
	return d.inNode(n.Name, func(x *ns.NS, v *ns.View) error { return x.StartIn(v, cmd, join) })
}

// labCgroups are the cgroup directories of lab labName to remove: those
// its state records, and, found in the hierarchy, those a deploy killed
// before it could record them may have left (nslab/LAB and its nodes').
func labCgroups(labName string, st *state.State) []string {
	var dirs []string
	if st != nil {
		dirs = append(dirs, st.Cgroups...)
	}
	h, err := cgroup.Find()
	if err != nil {
		return dirs
	}
	for _, d := range h.Lab(labName).Dirs() {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
		for _, e := range ents {
			if sub := filepath.Join(d, e.Name()); e.IsDir() && !slices.Contains(dirs, sub) {
				dirs = append(dirs, sub)
			}
		}
	}
	return dirs
}

// cgroupRemoval removes the lab's cgroups, after its services stopped.
func cgroupRemoval(labName string, st *state.State) removal {
	dirs := labCgroups(labName, st)
	return removal{
		Name: "remove the nodes' cgroups",
		Shell: func() []string {
			var out []string
			for i := len(dirs) - 1; i >= 0; i-- {
				out = append(out, fmt.Sprintf("xargs -r kill -9 < %s/cgroup.procs; rmdir %s", dirs[i], dirs[i]))
			}
			return out
		},
		Do: func(*DestroyReport) error { return cgroup.Remove(dirs) },
	}
}

// shLimits is makeCgroup as shell lines (for the cgroup hierarchy of this
// host, /sys/fs/cgroup v2 when none is found).
func shLimits(l *spec.Lab, n *spec.Node) []string {
	h, err := cgroup.Find()
	if err != nil {
		h = &cgroup.Hierarchy{Version: 2, V2: "/sys/fs/cgroup"}
	}
	g, lim := h.Node(l.Name, n.Name), n.Limits
	var out []string
	for _, d := range g.Dirs() {
		out = append(out, "mkdir -p "+d)
	}
	if h.Version == 2 {
		root := filepath.Join(h.V2, cgroup.Root)
		out = append(out, fmt.Sprintf("echo '+cpu +memory +pids' > %s/cgroup.subtree_control; echo '+cpu +memory +pids' > %s/%s/cgroup.subtree_control", root, root, l.Name))
	}
	dir := func(c string) string {
		if h.Version == 2 {
			return g.Dirs()[0]
		}
		return filepath.Join(h.V1[c], cgroup.Root, l.Name, n.Name)
	}
	if lim.CPU > 0 {
		quota := int(lim.CPU * 1000)
		if h.Version == 2 {
			out = append(out, fmt.Sprintf("echo '%d 100000' > %s/cpu.max", quota, dir("cpu")))
		} else {
			out = append(out, fmt.Sprintf("echo 100000 > %s/cpu.cfs_period_us; echo %d > %s/cpu.cfs_quota_us", dir("cpu"), quota, dir("cpu")))
		}
	}
	if lim.Memory > 0 {
		file := map[int]string{1: "memory.limit_in_bytes", 2: "memory.max"}[h.Version]
		out = append(out, fmt.Sprintf("echo %d > %s/%s", lim.Memory, dir("memory"), file))
	}
	if lim.Pids > 0 {
		out = append(out, fmt.Sprintf("echo %d > %s/pids.max", lim.Pids, dir("pids")))
	}
	return append(out, fmt.Sprintf("# the node's programs start with: echo $$ > %s/cgroup.procs; exec ...", dir("cpu")))
}

// NodeCgroup is a deployed node's cgroup, nil when the node has no
// limits (its lab's state records no cgroup of it).
func (m *Manager) NodeCgroup(labName, node string) (*cgroup.Group, error) {
	foundLab, foundNode, _, err := m.Store().LocateNode(labName, node)
	if err != nil {
		return nil, err
	}
	st, err := m.Recorded(foundLab)
	if err != nil || len(st.Cgroups) == 0 {
		return nil, err
	}
	h, err := cgroup.Find()
	if err != nil {
		return nil, err
	}
	g := h.Node(foundLab, foundNode)
	if !slices.Contains(st.Cgroups, g.Dirs()[0]) {
		return nil, nil
	}
	return g, nil
}
