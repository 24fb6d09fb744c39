package lab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/cgroup"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/live"
	"github.com/nslab/nslab/topology/lab/plan"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// What apply does to take a step of a running lab back (Step.undo), each
// in the node's namespace through its handle. What is gone already (a
// link its peer's namespace took along, an address of a deleted link)
// counts as taken back.

// interfacesOf is the objects of node's interfaces names.
func interfacesOf(node string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = node + ":" + n
	}
	return out
}

// nodeProcessNeeds is what a program of node needs: its namespace, view
// and cgroup.
func nodeProcessNeeds(node string) []string {
	return []string{node, node + "/view", node + "/cgroup"}
}

// gone reports whether err is nil or says the object is not there.
func gone(err error) bool {
	var notFound netlink.LinkNotFoundError
	return err == nil || errors.As(err, &notFound) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) ||
		errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, os.ErrNotExist)
}

// deleteLink deletes interface name of node (a veth pair goes whole).
//
// Equivalent to: ip -n NS link del NAME
func (d *deployer) deleteLink(node, name string) error {
	h := d.handles[node]
	if h == nil {
		return nil // its namespace went first
	}
	defer delete(d.index, spec.Endpoint{Node: node, Interface: name})
	l, err := nlsafe.LinkByName(h, name)
	if err != nil && gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find %s:%s: %w", node, name, err)
	}
	if err := h.LinkDel(l); err != nil && !gone(err) {
		return fmt.Errorf("delete %s:%s: %w", node, name, err)
	}
	return nil
}

// delAddress removes address a from n's interface ifname.
//
// Equivalent to: ip -n NS addr del A dev IF
func (d *deployer) delAddress(n *spec.Node, ifname string, a netip.Prefix) error {
	idx := d.ifindex(n.Name, ifname)
	if idx == 0 {
		return nil
	}
	err := d.handles[n.Name].AddrDel(d.link(n.Name, ifname), &netlink.Addr{IPNet: live.IPNet(a)})
	if !gone(err) {
		return fmt.Errorf("delete address %s from %s:%s: %w", a, n.Name, ifname, err)
	}
	return nil
}

// delRoute removes route r from n.
//
// Equivalent to: ip -n NS route del ...
func (d *deployer) delRoute(n *spec.Node, r *spec.Route) error {
	err := d.handles[n.Name].RouteDel(live.Route(r, d.ifindex(n.Name, r.Dev)))
	if !gone(err) {
		return fmt.Errorf("delete route %s in %s: %w", r, n.Name, err)
	}
	return nil
}

// delRule removes policy routing rule r from n.
//
// Equivalent to: ip -n NS rule del ...
func (d *deployer) delRule(n *spec.Node, r *spec.Rule) error {
	err := d.handles[n.Name].RuleDel(netlinkRule(r))
	if !gone(err) {
		return fmt.Errorf("delete rule %s in %s: %w", r, n.Name, err)
	}
	return nil
}

// clearImpair removes interface i's impairment.
//
// Equivalent to: tc -n NS qdisc del dev IF root
func (d *deployer) clearImpair(n *spec.Node, i *spec.Interface) error {
	idx := d.ifindex(n.Name, i.Name)
	if idx == 0 {
		return nil
	}
	if _, err := qdisc.Clear(d.handles[n.Name], d.link(n.Name, i.Name)); !gone(err) {
		return fmt.Errorf("clear the impairment of %s:%s: %w", n.Name, i.Name, err)
	}
	return nil
}

// removeView unmounts node's view; the programs that run in it keep it
// until they stop (apply stops them first: they need it).
func (d *deployer) removeView(node string) error {
	return ns.RemoveView(d.m.viewsDir(), d.m.labViews(d.lab.Name), d.lab.Namespace(node))
}

// removeCgroup removes node's cgroup (killing what is left in it) and
// forgets it in the state.
func (d *deployer) removeCgroup(node string) error {
	h, err := d.hierarchy()
	if err != nil {
		return err
	}
	dirs := h.Node(d.lab.Name, node).Dirs()
	if err := cgroup.Remove(dirs); err != nil {
		return err
	}
	d.st.Cgroups = slices.DeleteFunc(d.st.Cgroups, func(x string) bool { return slices.Contains(dirs, x) })
	return d.m.saveState(d.st)
}

// stopTagged stops the processes of node whose service mark is tag (its
// service index, or its routing daemons with index -1), and forgets
// their records.
func (d *deployer) stopTagged(node, tag string, index int) error {
	procs := map[int]uint64{}
	for pid, start := range markedWith(tag) {
		if tagOf(pid) == tag {
			procs[pid] = start
		}
	}
	for _, s := range d.st.Services {
		if s.Node == node && s.Index == index && s.PID > 0 && deployed.Alive(s.PID, s.Start) {
			procs[s.PID] = s.Start
		}
	}
	_ = stopAll(procs) // what is left is checked below
	for pid, start := range procs {
		if deployed.Alive(pid, start) {
			return fmt.Errorf("%s: pid %d still runs after SIGKILL", tag, pid)
		}
	}
	kind := strings.TrimPrefix(tag, d.lab.Name+"/"+node+"/")
	d.st.Services = slices.DeleteFunc(d.st.Services, func(s state.ServiceRecord) bool {
		return s.Node == node && s.Index == index && (index >= 0 || strings.HasPrefix(s.Command, kind+":"))
	})
	return d.m.saveState(d.st)
}

// tagOf is process pid's service mark ("" without one).
func tagOf(pid int) string {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, deployed.ServiceEnv+"="); ok {
			return v
		}
	}
	return ""
}

// removeNode takes node out of the running lab: its processes stop, its
// cgroup, view and namespace go (with every object in it, and the peer
// ends of its veths), and the state forgets its services.
//
// Equivalent to: ip netns pids NS | xargs kill; ip netns del NS
func (d *deployer) removeNode(node string) error {
	procs := markedWith(d.lab.Name + "/" + node + "/")
	nsName := d.lab.Namespace(node)
	if x, err := ns.Open(d.m.netnsDir(), nsName); err == nil {
		if ino, err := x.Inode(); err == nil {
			for pid, start := range inNamespace(ino) {
				procs[pid] = start
			}
		}
		x.Close()
	}
	_ = stopAll(procs) // the namespace goes next: what it held goes with it
	d.st.Services = slices.DeleteFunc(d.st.Services, func(s state.ServiceRecord) bool { return s.Node == node })
	errs := []error{d.removeView(node)}
	if slices.ContainsFunc(d.st.Cgroups, func(dir string) bool { return strings.HasSuffix(dir, "/"+d.lab.Name+"/"+node) }) {
		errs = append(errs, d.removeCgroup(node))
	}
	// The kernel tears a namespace down in the background: its veths
	// (and their peers in the nodes that stay) go now, as the file says.
	errs = append(errs, d.deleteLinks(node))
	if h := d.handles[node]; h != nil {
		h.Close()
		delete(d.handles, node)
	}
	for ep := range d.index {
		if ep.Node == node {
			delete(d.index, ep)
		}
	}
	if err := ns.Remove(d.m.netnsDir(), nsName); err != nil && !gone(err) {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, d.m.saveState(d.st))...)
}

// deleteLinks deletes every link of node but lo.
func (d *deployer) deleteLinks(node string) error {
	if d.handles[node] == nil {
		if err := d.openHandle(node); err != nil {
			return nil // no namespace: nothing in it
		}
	}
	h := d.handles[node]
	links, err := nlsafe.LinkList(h)
	if err != nil {
		return fmt.Errorf("list the links of %s: %w", node, err)
	}
	for _, l := range links {
		if l.Attrs().Index == loIndex {
			continue
		}
		if err := h.LinkDel(l); err != nil && !gone(err) {
			return fmt.Errorf("delete %s:%s: %w", node, l.Attrs().Name, err)
		}
	}
	return nil
}

// undoShell is taking step s of lab l back as shell lines, for apply
// --dry-run.
func undoShell(l *spec.Lab, s Step) []string {
	nsOf := func(obj string) string { return l.Namespace(plan.NodeOf(obj)) }
	switch {
	case s.IsNamespace():
		name := l.Namespace(s.Makes[0])
		return []string{fmt.Sprintf("ip netns pids %s | xargs -r kill; ip netns del %s", name, name)}
	case len(s.Makes) > 0 && strings.Contains(s.Makes[0], ":"):
		_, ifc, _ := strings.Cut(s.Makes[0], ":")
		return []string{fmt.Sprintf("ip -n %s link del %s", nsOf(s.Makes[0]), ifc)}
	case len(s.Makes) > 0 && strings.HasSuffix(s.Makes[0], "/view"):
		mnt, uts := ns.ViewPaths(filepath.Join(DefaultStateDir, "views", l.Name), nsOf(s.Makes[0]))
		return []string{fmt.Sprintf("umount -l %s %s; rm -f %s %s", mnt, uts, mnt, uts)}
	case len(s.Makes) > 0 && strings.HasSuffix(s.Makes[0], "/cgroup"):
		return []string{fmt.Sprintf("rmdir /sys/fs/cgroup/%s/%s/%s  # and in each v1 hierarchy", cgroup.Root, l.Name, plan.NodeOf(s.Makes[0]))}
	case strings.HasPrefix(s.Name, "impair "):
		_, ifc, _ := strings.Cut(s.Needs[0], ":")
		return []string{fmt.Sprintf("tc -n %s qdisc del dev %s root", nsOf(s.Needs[0]), ifc)}
	case strings.HasPrefix(s.Name, "nftables table"):
		return []string{fmt.Sprintf("ip netns exec %s nft delete table inet nslab", nsOf(s.Needs[0]))}
	case strings.HasPrefix(s.Name, "start "):
		return []string{fmt.Sprintf("for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -q '^%s=%s/%s/' && kill ${p#/proc/}; done  # %s", deployed.ServiceEnv, l.Name, plan.NodeOf(s.Needs[0]), s.Name)}
	}
	var out []string
	for _, line := range s.Shell() {
		for _, verb := range []string{" addr ", " route ", " rule "} {
			if strings.Contains(line, verb+"add ") {
				out = append(out, strings.Replace(line, verb+"add ", verb+"del ", 1))
			}
		}
	}
	if len(out) == 0 {
		out = []string{"# (nothing to take back by hand: " + s.Name + ")"}
	}
	return out
}
