package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// A link between hosts is a VXLAN interface at each end. The local end is
// created in the host namespace (this process's), where its UDP socket
// stays bound to the underlay, under a name of its own, then moved into
// its node and renamed there. It is the one object a deploy puts in the
// host namespace: recorded in the state before it is made, and removed by
// destroy when a killed deploy left it there (in its node, it goes with
// the namespace).

// tunnelName is the name of a VXLAN interface in the host namespace: the
// VNI makes it unique there (the kernel allows one device per VNI and
// port on a host anyway).
func tunnelName(vni int) string { return fmt.Sprintf("nslx%d", vni) }

func tunnelRecords(l *spec.Lab) []state.TunnelRecord {
	var out []state.TunnelRecord
	for _, t := range l.Tunnels() {
		out = append(out, state.TunnelRecord{Node: t.Local.Node, Interface: t.Local.Interface, HostName: tunnelName(t.VNI), VNI: t.VNI})
	}
	return out
}

func tunnelSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, t := range l.Tunnels() {
		name := tunnelName(t.VNI)
		steps = append(steps, Step{
			Name:  fmt.Sprintf("create VXLAN %s in the host namespace for %s", name, t),
			Shell: func() []string { return shTunnel(l, t)[:1] },
			Do:    func(d *deployer) error { return d.createTunnel(t) },
		}, Step{
			Name:  fmt.Sprintf("move VXLAN %s into %s as %s", name, t.Local.Node, t.Local.Interface),
			Shell: func() []string { return shTunnel(l, t)[1:] },
			Do:    func(d *deployer) error { return d.moveTunnel(t) },
		})
	}
	return steps
}

// createTunnel makes the local end of a link between hosts in the host
// namespace: a VXLAN interface with the link's VNI and port, from this
// host's underlay address to the other host's, with the interface's MAC
// and MTU. Its UDP socket will live in the host namespace.
//
// Equivalent to: ip link add nslxVNI address M mtu N type vxlan id VNI
// local A remote B dstport P
func (d *deployer) createTunnel(t *spec.Tunnel) error {
	i := d.lab.Node(t.Local.Node).Interface(t.Local.Interface)
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU, attrs.HardwareAddr = tunnelName(t.VNI), i.MTU, i.MAC
	vx := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: t.VNI, SrcAddr: ip(t.LocalIP), Group: ip(t.RemoteIP), Port: t.Port, Learning: true}
	if err := netlink.LinkAdd(vx); err != nil {
		return fmt.Errorf("create VXLAN %s in the host namespace: %w%s", attrs.Name, err, missingKind(err, "vxlan", "CONFIG_VXLAN", "vxlan"))
	}
	// Marked at once (the kernel takes no alias in a create message), so
	// that a destroy without a state file can prove it is the lab's.
	if err := netlink.LinkSetAlias(vx, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark VXLAN %s in the host namespace: %w", attrs.Name, err)
	}
	return nil
}

// moveTunnel moves the VXLAN interface of t into its node, renames it
// there, marks it and sets it up.
//
// Equivalent to: ip link set nslxVNI netns NS; ip -n NS link set nslxVNI
// name IF; ip -n NS link set IF up
func (d *deployer) moveTunnel(t *spec.Tunnel) error {
	name := tunnelName(t.VNI)
	vx, err := nlsafe.LinkByName(nlsafe.Caller, name)
	if err != nil {
		return fmt.Errorf("find VXLAN %s in the host namespace: %w", name, err)
	}
	if err := d.inNS(t.Local.Node, func(x *ns.NS) error { return netlink.LinkSetNsFd(vx, x.Fd()) }); err != nil {
		return fmt.Errorf("move VXLAN %s into %s: %w", name, t.Local.Node, err)
	}
	h := d.handles[t.Local.Node]
	l, err := nlsafe.LinkByName(h, name)
	if err != nil {
		return fmt.Errorf("find VXLAN %s in %s: %w", name, t.Local.Node, err)
	}
	if err := h.LinkSetName(l, t.Local.Interface); err != nil {
		return fmt.Errorf("rename VXLAN %s to %s: %w", name, t.Local, err)
	}
	if err := h.LinkSetAlias(l, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark %s: %w", t.Local, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up: %w", t.Local, err)
	}
	d.index[t.Local] = l.Attrs().Index
	return nil
}

// tunnelEnds is the set of the part's local ends of links to other hosts.
func tunnelEnds(l *spec.Lab) map[spec.Endpoint]bool {
	out := make(map[spec.Endpoint]bool, len(l.Tunnels()))
	for _, t := range l.Tunnels() {
		out[t.Local] = true
	}
	return out
}

func ip(a netip.Addr) net.IP { return net.IP(a.AsSlice()) }

func shTunnel(l *spec.Lab, t *spec.Tunnel) []string {
	i := l.Node(t.Local.Node).Interface(t.Local.Interface)
	name, nsName := tunnelName(t.VNI), l.Namespace(t.Local.Node)
	return []string{
		fmt.Sprintf("ip link add %s%s type vxlan id %d local %s remote %s dstport %d", name, linkOpts(i.MAC.String(), i.MTU, 0), t.VNI, t.LocalIP, t.RemoteIP, t.Port),
		fmt.Sprintf("ip link set dev %s netns %s", name, nsName),
		fmt.Sprintf("ip -n %s link set dev %s name %s", nsName, name, i.Name),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", nsName, i.Name, linkMarker(l.Name)),
		fmt.Sprintf("ip -n %s link set dev %s up", nsName, i.Name),
	}
}

// checkTunnels says, before anything changes, what would stop the part's
// VXLAN interfaces: this host must hold the part's underlay address, and
// no device may have a tunnel's name in the host namespace. It runs in
// the host namespace.
func checkTunnels(l *spec.Lab) []string {
	if len(l.Tunnels()) == 0 {
		return nil
	}
	var problems []string
	local := l.Tunnels()[0].LocalIP
	addrs, err := nlsafe.AddrList(nlsafe.Caller, nil, netlink.FAMILY_ALL)
	if err != nil {
		return []string{fmt.Sprintf("list this host's addresses: %v", err)}
	}
	held := false
	for _, a := range addrs {
		if b, ok := netip.AddrFromSlice(a.IP); ok && b.Unmap() == local {
			held = true
		}
	}
	if !held {
		problems = append(problems, fmt.Sprintf("host %s's underlay address %s is not on this machine: run this part on host %s, or fix hosts.%s.underlay", l.OnHost(), local, l.OnHost(), l.OnHost()))
	}
	for _, t := range l.Tunnels() {
		if _, err := nlsafe.LinkByName(nlsafe.Caller, tunnelName(t.VNI)); err == nil {
			problems = append(problems, fmt.Sprintf("a device %s already exists in the host namespace (VNI %d of %s): another lab uses that VNI; give the link another vni:", tunnelName(t.VNI), t.VNI, t.Local))
		}
	}
	return problems
}

// removeTunnel deletes a recorded VXLAN interface that a killed deploy
// left in the host namespace: only a vxlan device of that name with the
// recorded VNI. Gone (moved into its node, or never made) is fine.
func removeTunnel(r state.TunnelRecord) error {
	return deleteVxlan(&netlink.Handle{}, "the host namespace", r.HostName, r.VNI, "")
}

// deleteVxlan deletes the device called name through h (a zero Handle
// works in the calling thread's namespace; where names it for errors)
// when it is a vxlan device with VNI vni and, unless marker is "", that
// alias. A device that is not there, or not that one, is left alone.
func deleteVxlan(h *netlink.Handle, where, name string, vni int, marker string) error {
	l, err := nlsafe.LinkByName(h, name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", name, where, err)
	}
	if vx, ok := l.(*netlink.Vxlan); !ok || vx.VxlanId != vni || (marker != "" && l.Attrs().Alias != marker) {
		return nil // not ours: left alone
	}
	if err := h.LinkDel(l); err != nil {
		return fmt.Errorf("delete VXLAN %s from %s: %w", name, where, err)
	}
	return nil
}

// tunnelRemovals deletes the part's VXLAN interfaces (records: a state's,
// or those a part's file describes) before the namespaces go: each in its
// node (nsNames: node -> namespace), and any that a killed deploy left in
// the host namespace. A namespace is torn down by the kernel in the
// background after destroy returns, and until then a VXLAN interface in it
// keeps its VNI taken in the host namespace, where its socket is: deleted
// first, the VNI is free when destroy returns, and the part can be
// deployed again at once.
func (m *Manager) tunnelRemovals(labName string, records []state.TunnelRecord, nsNames map[string]string) []removal {
	var plan []removal
	for _, r := range records {
		nsName := nsNames[r.Node]
		plan = append(plan, removal{
			Name: fmt.Sprintf("delete VXLAN %s in %s, which frees VNI %d on this host", r.Interface, r.Node, r.VNI),
			Shell: func() []string {
				return []string{fmt.Sprintf("for d in %s %s; do owned %s %s && ip -n %s -d link show dev $d 2>/dev/null | grep 'vxlan id %d ' >/dev/null && ip -n %s link del dev $d; done || true",
					r.Interface, r.HostName, nsName, nsMarker(labName, r.Node), nsName, r.VNI, nsName)}
			},
			Do: func(*DestroyReport) error { return releaseTunnel(m.netnsDir(), nsName, labName, r) },
		}, removal{
			Name: fmt.Sprintf("delete VXLAN %s from the host namespace if a deploy left it there", r.HostName),
			Shell: func() []string {
				return []string{fmt.Sprintf("ip -d link show dev %s 2>/dev/null | grep 'vxlan id %d ' >/dev/null && ip link del dev %s || true", r.HostName, r.VNI, r.HostName)}
			},
			Do: func(*DestroyReport) error { return removeTunnel(r) },
		})
	}
	return plan
}

// releaseTunnel deletes r's VXLAN interface inside namespace nsName (under
// dir), through a netlink handle opened there (the caller's thread stays
// where it is): only a vxlan device with the recorded VNI and the lab's
// marker, under its interface name or, when a deploy was stopped between
// the move and the rename, under its host name. A namespace or an
// interface that is not there, or a node the destroy has no namespace
// name for, is fine.
func releaseTunnel(dir, nsName, labName string, r state.TunnelRecord) error {
	if nsName == "" {
		return nil
	}
	return inNamespaceAt(dir, nsName, func(h *netlink.Handle) error {
		return errors.Join(deleteVxlan(h, nsName, r.Interface, r.VNI, linkMarker(labName)),
			deleteVxlan(h, nsName, r.HostName, r.VNI, linkMarker(labName)))
	})
}

// unprovenWithoutState is what a destroy cannot give back when the lab's
// state file is damaged: it is recorded there alone.
var unprovenWithoutState = []string{
	"SR-IOV VFs and PF settings the lab changed (recorded only in the state file): check the PFs' sriov_numvfs and VF names by hand",
}

// markedTunnelRemoval deletes, when there is no usable state, every VXLAN
// device that carries lab labName's marker: in the host namespace (named
// nslxVNI, left by a killed deploy) and in each of the lab's namespaces
// (records), before they go, so that their VNIs are free when destroy
// returns.
func (m *Manager) markedTunnelRemoval(labName string, records []state.NSRecord) removal {
	marker := linkMarker(labName)
	return removal{
		Name: "delete the VXLAN devices that carry the lab's marker",
		Shell: func() []string {
			return []string{fmt.Sprintf("# (nslab deletes each vxlan device whose alias is %s, in the host namespace and in the lab's namespaces)", marker)}
		},
		Do: func(*DestroyReport) error {
			errs := []error{deleteMarkedVxlans(nlsafe.Caller, "the host namespace", marker)}
			for _, r := range records {
				errs = append(errs, m.inNamespace(r.Name, func(h *netlink.Handle) error {
					return deleteMarkedVxlans(h, r.Name, marker)
				}))
			}
			return errors.Join(errs...)
		},
	}
}

// deleteMarkedVxlans deletes every vxlan device with alias marker that h
// sees (where names the namespace for errors).
func deleteMarkedVxlans(h *netlink.Handle, where, marker string) error {
	links, err := nlsafe.LinkList(h)
	if err != nil {
		return fmt.Errorf("list links in %s: %w", where, err)
	}
	var errs []error
	for _, l := range links {
		if vx, ok := l.(*netlink.Vxlan); ok && l.Attrs().Alias == marker {
			errs = append(errs, deleteVxlan(h, where, l.Attrs().Name, vx.VxlanId, marker))
		}
	}
	return errors.Join(errs...)
}

// inNamespace runs fn with a netlink handle opened in the named namespace
// (see inNamespaceAt).
func (m *Manager) inNamespace(name string, fn func(h *netlink.Handle) error) error {
	return inNamespaceAt(m.netnsDir(), name, fn)
}

// inNamespaceAt runs fn with a netlink handle opened in namespace name
// under dir (the caller's thread stays where it is); a namespace that is
// gone, or is not one, is fine.
func inNamespaceAt(dir, name string, fn func(h *netlink.Handle) error) error {
	n, err := ns.Open(dir, name)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, ns.ErrNotNamespace) {
		return nil
	}
	if err != nil {
		return err
	}
	defer n.Close()
	h, err := n.NetlinkHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	return fn(h)
}
