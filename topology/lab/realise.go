package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// deployer carries what a deploy has opened and created. Each node's
// namespace has one netlink handle, opened inside it when it was created;
// every link, address and route operation goes through that handle and so
// happens in the node's namespace, from whatever goroutine.
type deployer struct {
	m       *Manager
	lab     *spec.Lab
	st      *State // the state file's contents, saved ahead of host changes
	creator *ns.Creator
	nss     map[string]*ns.NS          // node -> open namespace
	handles map[string]*netlink.Handle // node -> rtnetlink handle inside it
	index   map[spec.Endpoint]int      // interface or bridge -> ifindex in its node
	created []string                   // namespace names, in creation order
}

func (d *deployer) close() {
	if d.creator != nil {
		d.creator.Close()
		d.creator = nil
	}
	for k, h := range d.handles {
		h.Close()
		delete(d.handles, k)
	}
	for k, n := range d.nss {
		n.Close()
		delete(d.nss, k)
	}
}

// loIndex is the ifindex of the loopback in every new network namespace.
const loIndex = 1

// createNamespace makes node n's namespace. Inside it, before it gets its
// name, the creator thread opens the node's netlink handle, marks and brings
// up lo, and turns IPv6 off by default so that lab links come up without
// autoconfiguration noise (router solicitations, DAD, MLD); interfaces with
// IPv6 addresses get it back in configureNode.
//
// Equivalent to: ip netns add NS; ip -n NS link set lo up alias nslab:LAB:NODE;
// ip netns exec NS sysctl -w net.ipv6.conf.default.disable_ipv6=1 [forwarding, sysctls]
func (d *deployer) createNamespace(n *spec.Node) error {
	if d.creator == nil {
		c, err := ns.NewCreator(d.m.netnsDir())
		if err != nil {
			return err
		}
		d.creator = c
	}
	var h *netlink.Handle
	nsh, err := d.creator.Create(d.lab.Namespace(n.Name), func() error {
		var err error
		if h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			return fmt.Errorf("netlink socket: %w", err)
		}
		lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: loIndex, Name: "lo"}}
		if err := h.LinkSetAlias(lo, nsMarker(d.lab.Name, n.Name)); err != nil {
			return fmt.Errorf("mark lo: %w", err)
		}
		if err := h.LinkSetUp(lo); err != nil {
			return fmt.Errorf("set lo up: %w", err)
		}
		if err := writeSysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", true); err != nil {
			return err
		}
		for _, kv := range namespaceSysctls(n) {
			key, val, _ := strings.Cut(kv, "=")
			if err := writeSysctl(spec.Sysctl{Key: key}.ProcPath(), val, false); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if h != nil {
			h.Close()
		}
		return err
	}
	d.created = append(d.created, nsh.Name)
	d.nss[n.Name], d.handles[n.Name] = nsh, h
	d.index[spec.Endpoint{Node: n.Name, Interface: "lo"}] = loIndex
	return nil
}

// createVeth makes a veth pair with each end created directly in its node's
// namespace, name, MAC and MTU set in the create message, both ends up and
// marked.
//
// Equivalent to: ip -n NSA link add A [address M] [mtu N] type veth peer
// name B netns NSB [address M] [mtu N]; ip -n NSB link set B up;
// ip -n NSA link set A up
func (d *deployer) createVeth(l *spec.Link) error {
	na, nb := d.lab.Node(l.A.Node), d.lab.Node(l.B.Node)
	a, b := na.Interface(l.A.Interface), nb.Interface(l.B.Interface)
	ha, hb := d.handles[na.Name], d.handles[nb.Name]
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU, attrs.HardwareAddr = a.Name, a.MTU, a.MAC
	peerMTU := uint32(b.MTU)
	if peerMTU == 0 && a.MTU != 0 {
		peerMTU = 1500 // netlink would otherwise give the peer A's MTU
	}
	veth := &netlink.Veth{
		LinkAttrs: attrs, PeerName: b.Name, PeerMTU: peerMTU, PeerHardwareAddr: b.MAC,
		PeerTxQLen: -1, PeerNamespace: netlink.NsFd(d.nss[nb.Name].Fd()),
	}
	if err := ha.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s <-> %s: %w%s", l.A, l.B, err, missingKind(err, "veth", "CONFIG_VETH"))
	}
	if veth.Index == 0 {
		return fmt.Errorf("create veth %s: kernel reported no index", l.A)
	}
	d.index[l.A] = veth.Index
	if err := ha.LinkSetAlias(veth, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark %s: %w", l.A, err)
	}
	peer, err := hb.LinkByName(b.Name)
	if err != nil {
		return fmt.Errorf("find veth end %s: %w", l.B, err)
	}
	d.index[l.B] = peer.Attrs().Index
	if err := hb.LinkSetAlias(peer, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark %s: %w", l.B, err)
	}
	// Up in this order: B first, then A. Bringing A up while B is already
	// up turns the carrier on at both ends while both are running, which
	// the kernel reports at once; any other order leaves one end's
	// operational state "down" for up to a second.
	if err := hb.LinkSetUp(peer); err != nil {
		return fmt.Errorf("set %s up: %w", l.B, err)
	}
	if err := ha.LinkSetUp(veth); err != nil {
		return fmt.Errorf("set %s up: %w", l.A, err)
	}
	return nil
}

// createBridge makes a bridge in node n and enslaves its ports.
//
// Equivalent to: ip -n NS link add BR [address M] up type bridge;
// ip -n NS link set PORT master BR; [ip -n NS link set BR mtu N]
func (d *deployer) createBridge(n *spec.Node, b *spec.Bridge) error {
	h := d.handles[n.Name]
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.HardwareAddr, attrs.Flags = b.Name, b.MAC, net.FlagUp
	br := &netlink.Bridge{LinkAttrs: attrs}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s:%s: %w%s", n.Name, b.Name, err, missingKind(err, "bridge", "CONFIG_BRIDGE"))
	}
	d.index[spec.Endpoint{Node: n.Name, Interface: b.Name}] = br.Index
	if err := h.LinkSetAlias(br, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark bridge %s:%s: %w", n.Name, b.Name, err)
	}
	for _, p := range b.Ports {
		port := d.link(n.Name, p)
		// The bridge enables a port at enslave time only if the port is
		// operationally up (the kernel sets that asynchronously after the
		// veth came up); otherwise the port stays disabled for a while and
		// the first packets through a fresh lab are lost.
		if err := waitOperUp(h, port.Attrs().Index, portUpTimeout); err != nil {
			return fmt.Errorf("port %s:%s of bridge %s: %w", n.Name, p, b.Name, err)
		}
		if err := h.LinkSetMasterByIndex(port, br.Index); err != nil {
			return fmt.Errorf("add port %s:%s to bridge %s: %w", n.Name, p, b.Name, err)
		}
	}
	if b.MTU != 0 {
		if err := h.LinkSetMTU(br, b.MTU); err != nil {
			return fmt.Errorf("set mtu %d on bridge %s:%s: %w", b.MTU, n.Name, b.Name, err)
		}
	}
	return nil
}

// waitLinksUp returns once every veth end and bridge of the lab reports
// operational state up, so that a deploy hands over a lab that is ready
// (and that inspect shows as up). The kernel updates that state
// asynchronously; a single-link RTM_GETLINK, as LinkByIndex sends, makes it
// catch up on that link at once on current kernels, and older ones are
// polled until the bound.
func (d *deployer) waitLinksUp() error {
	for ep, idx := range d.index {
		if ep.Interface == "lo" {
			continue
		}
		if i := d.lab.Node(ep.Node).Interface(ep.Interface); i != nil && i.VF {
			continue // a VF's link follows the PF's wire, not the lab
		}
		if err := waitOperUp(d.handles[ep.Node], idx, portUpTimeout); err != nil {
			return fmt.Errorf("interface %s: %w", ep, err)
		}
	}
	return nil
}

// missingKind explains EOPNOTSUPP from a link create: the kernel has no
// driver for the kind (not built, or the module could not be loaded).
func missingKind(err error, kind, config string) string {
	if !errors.Is(err, unix.EOPNOTSUPP) {
		return ""
	}
	return fmt.Sprintf(" (this kernel has no %s devices: it needs %s, or `modprobe %s` if it is a module)", kind, config, kind)
}

// portUpTimeout bounds the wait for a bridge port to be operationally up.
const portUpTimeout = 3 * time.Second

// waitOperUp polls a link until its operational state is up.
func waitOperUp(h *netlink.Handle, index int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l, err := h.LinkByIndex(index)
		if err != nil {
			return err
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still %s after %s (is its peer up?)", l.Attrs().OperState, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// configureNode writes the settings of node n that need its interfaces, from
// a thread inside its namespace: IPv6 on for interfaces that have IPv6
// addresses, then the user's per-interface sysctls.
//
// Equivalent to: ip netns exec NS sysctl -w KEY=VALUE ...
func (d *deployer) configureNode(n *spec.Node) error {
	type kv struct{ path, val string }
	var writes []kv
	for _, name := range ipv6Interfaces(n) {
		writes = append(writes, kv{"/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6", "0"})
	}
	for _, s := range n.Sysctls {
		if s.Interface() != "" {
			writes = append(writes, kv{s.ProcPath(), s.Value})
		}
	}
	return d.nss[n.Name].Do(func() error {
		for _, w := range writes {
			if err := writeSysctl(w.path, w.val, false); err != nil {
				return fmt.Errorf("in %s: %w", n.Name, err)
			}
		}
		return nil
	})
}

// writeSysctl writes one /proc/sys value in the calling thread's namespace.
// optional: a missing file (IPv6 compiled out) is not an error.
func writeSysctl(path, val string, optional bool) error {
	err := os.WriteFile(path, []byte(val), 0)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrNotExist) {
		if optional {
			return nil
		}
		return fmt.Errorf("set %s = %s: no such sysctl in this namespace (is the key right, and does the kernel have it?)", path, val)
	}
	return fmt.Errorf("set %s = %s: %w", path, val, err)
}

// addAddress assigns an address to an interface or bridge of node n. IPv6
// addresses skip duplicate address detection, so they are usable at once.
//
// Equivalent to: ip -n NS addr add A dev IF [nodad]
func (d *deployer) addAddress(n *spec.Node, ifname string, a netip.Prefix) error {
	addr := &netlink.Addr{IPNet: ipNet(a)}
	if a.Addr().Is6() {
		addr.Flags = unix.IFA_F_NODAD
	}
	if err := d.handles[n.Name].AddrAdd(d.link(n.Name, ifname), addr); err != nil {
		return fmt.Errorf("add address %s to %s:%s: %w", a, n.Name, ifname, err)
	}
	return nil
}

// addRoute adds a static route in node n's main table.
//
// Equivalent to: ip -n NS route add TO [via GW] [dev IF] [metric M]
func (d *deployer) addRoute(n *spec.Node, r *spec.Route) error {
	route := &netlink.Route{Dst: ipNet(r.To), Priority: r.Metric}
	if r.Via.IsValid() {
		route.Gw = net.IP(r.Via.AsSlice())
	} else {
		route.Scope = netlink.SCOPE_LINK // on-link, as ip route add gives it
	}
	if r.Dev != "" {
		route.LinkIndex = d.index[spec.Endpoint{Node: n.Name, Interface: r.Dev}]
	}
	if err := d.handles[n.Name].RouteAdd(route); err != nil {
		return fmt.Errorf("add route %s in %s: %w", r, n.Name, err)
	}
	return nil
}

// link returns a netlink link value for an interface created by this deploy.
func (d *deployer) link(node, name string) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: d.index[spec.Endpoint{Node: node, Interface: name}], Name: name}}
}

func ipNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}
