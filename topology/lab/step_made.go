package lab

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Interfaces nslab makes inside a node over or around others of the node
// (macvlan, VLAN, bond, VRF), after the veth pairs and VFs and before the
// bridges, each after what it is made of (spec.Node.MadeInOrder). They go
// with the namespace on destroy and rollback.

func madeSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, i := range n.MadeInOrder() {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("create %s %s:%s of %s", i.Kind, n.Name, i.Name, strings.Join(i.Lower(), ", ")),
				Shell: func() []string { return shMade(l, n, i) },
				Do:    func(d *deployer) error { return d.createMade(n, i) },
				Makes: []string{n.Name + ":" + i.Name},
				Needs: interfacesOf(n.Name, i.Lower()),
				Undo:  func(d *deployer) error { return d.deleteLink(n.Name, i.Name) },
			})
		}
	}
	return steps
}

// kernelOption is the kernel option (and module) behind each made kind.
var kernelOption = map[spec.Kind][2]string{
	spec.KindMacvlan: {"CONFIG_MACVLAN", "macvlan"},
	spec.KindVLAN:    {"CONFIG_VLAN_8021Q", "8021q"},
	spec.KindBond:    {"CONFIG_BONDING", "bonding"},
	spec.KindVRF:     {"CONFIG_NET_VRF", "vrf"},
}

// createMade makes interface i of node n in the node, marks it, enslaves
// a bond's or VRF's ports and sets it up.
//
// Equivalent to the lines of shMade.
func (d *deployer) createMade(n *spec.Node, i *spec.Interface) error {
	h := d.handles[n.Name]
	link := madeLink(i, func(name string) int { return d.ifindex(n.Name, name) })
	if err := h.LinkAdd(link); err != nil {
		opt := kernelOption[i.Kind]
		return fmt.Errorf("create %s %s:%s: %w%s", i.Kind, n.Name, i.Name, err, missingKind(err, i.Kind.String(), opt[0], opt[1]))
	}
	made, err := nlsafe.LinkByName(h, i.Name)
	if err != nil {
		return fmt.Errorf("find %s %s:%s: %w", i.Kind, n.Name, i.Name, err)
	}
	d.index[spec.Endpoint{Node: n.Name, Interface: i.Name}] = made.Attrs().Index
	if err := h.LinkSetAlias(made, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark %s:%s: %w", n.Name, i.Name, err)
	}
	if i.Kind == spec.KindBond || i.Kind == spec.KindVRF {
		for _, p := range i.Lower() {
			if err := enslave(h, d.link(n.Name, p), made, i.Kind == spec.KindBond); err != nil {
				return fmt.Errorf("add port %s:%s to %s %s: %w", n.Name, p, i.Kind, i.Name, err)
			}
		}
	}
	if i.Kind == spec.KindVRF {
		for _, r := range vrfUnreachable(i.VRF.Table) {
			if err := h.RouteAdd(r); err != nil {
				return fmt.Errorf("unreachable default in table %d of VRF %s:%s: %w", i.VRF.Table, n.Name, i.Name, err)
			}
		}
	}
	if err := h.LinkSetUp(made); err != nil {
		return fmt.Errorf("set %s:%s up: %w", n.Name, i.Name, err)
	}
	return nil
}

// madeLink is the create message of made interface i; index gives the
// ifindex of another interface of its node.
func madeLink(i *spec.Interface, index func(string) int) netlink.Link {
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU, attrs.HardwareAddr = i.Name, i.MTU, i.MAC
	switch i.Kind {
	case spec.KindMacvlan:
		attrs.ParentIndex = index(i.Macvlan.Parent)
		return &netlink.Macvlan{LinkAttrs: attrs, Mode: macvlanModes[i.Macvlan.Mode]}
	case spec.KindVLAN:
		attrs.ParentIndex = index(i.VLAN.Parent)
		return &netlink.Vlan{LinkAttrs: attrs, VlanId: i.VLAN.ID, VlanProtocol: netlink.VLAN_PROTOCOL_8021Q}
	case spec.KindBond:
		b := netlink.NewLinkBond(attrs)
		b.Mode, b.Miimon = netlink.StringToBondMode(i.Bond.Mode), i.Bond.MIIMon
		return b
	case spec.KindVRF:
		return &netlink.Vrf{LinkAttrs: attrs, Table: uint32(i.VRF.Table)}
	case spec.KindVeth, spec.KindLoopback, spec.KindVF:
	}
	panic(fmt.Sprintf("madeLink of a %s", i.Kind))
}

var macvlanModes = map[string]netlink.MacvlanMode{
	"bridge": netlink.MACVLAN_MODE_BRIDGE, "private": netlink.MACVLAN_MODE_PRIVATE,
	"vepa": netlink.MACVLAN_MODE_VEPA, "passthru": netlink.MACVLAN_MODE_PASSTHRU,
}

// enslave makes port a port of master. A bond takes a port that is down
// (the kernel refuses an up one on older releases), then it goes up again.
func enslave(h *netlink.Handle, port, master netlink.Link, down bool) error {
	if down {
		if err := h.LinkSetDown(port); err != nil {
			return err
		}
	}
	if err := h.LinkSetMasterByIndex(port, master.Attrs().Index); err != nil {
		return err
	}
	if down {
		return h.LinkSetUp(port)
	}
	return nil
}

func shMade(l *spec.Lab, n *spec.Node, i *spec.Interface) []string {
	name := l.Namespace(n.Name)
	opts := linkOpts(macString(i), i.MTU, 0)
	var out []string
	switch i.Kind {
	case spec.KindMacvlan:
		out = append(out, fmt.Sprintf("ip -n %s link add link %s name %s%s type macvlan mode %s", name, i.Macvlan.Parent, i.Name, opts, i.Macvlan.Mode))
	case spec.KindVLAN:
		out = append(out, fmt.Sprintf("ip -n %s link add link %s name %s%s type vlan id %d", name, i.VLAN.Parent, i.Name, opts, i.VLAN.ID))
	case spec.KindBond:
		out = append(out, fmt.Sprintf("ip -n %s link add %s%s type bond mode %s miimon %d", name, i.Name, opts, i.Bond.Mode, i.Bond.MIIMon))
	case spec.KindVRF:
		out = append(out, fmt.Sprintf("ip -n %s link add %s%s type vrf table %d", name, i.Name, opts, i.VRF.Table))
	case spec.KindVeth, spec.KindLoopback, spec.KindVF:
		return nil
	}
	out = append(out, fmt.Sprintf("ip -n %s link set dev %s alias %s", name, i.Name, linkMarker(l.Name)))
	if i.Kind == spec.KindVRF {
		for _, fam := range []string{"", " -6"} {
			out = append(out, fmt.Sprintf("ip -n %s%s route add unreachable default metric %d table %d", name, fam, spec.VRFUnreachableMetric, i.VRF.Table))
		}
	}
	for _, p := range i.Lower() {
		switch i.Kind {
		case spec.KindBond:
			out = append(out, fmt.Sprintf("ip -n %s link set dev %s down", name, p),
				fmt.Sprintf("ip -n %s link set dev %s master %s", name, p, i.Name),
				fmt.Sprintf("ip -n %s link set dev %s up", name, p))
		case spec.KindVRF:
			out = append(out, fmt.Sprintf("ip -n %s link set dev %s master %s", name, p, i.Name))
		case spec.KindVeth, spec.KindLoopback, spec.KindVF, spec.KindMacvlan, spec.KindVLAN:
		}
	}
	return append(out, fmt.Sprintf("ip -n %s link set dev %s up", name, i.Name))
}

// vrfUnreachable is the unreachable default routes (IPv4 and IPv6) that
// end a VRF's table (see spec.VRFUnreachableMetric).
func vrfUnreachable(table int) []*netlink.Route {
	var out []*netlink.Route
	for _, dst := range []string{"0.0.0.0/0", "::/0"} {
		_, n, _ := net.ParseCIDR(dst)
		out = append(out, &netlink.Route{Dst: n, Table: table, Type: unix.RTN_UNREACHABLE, Priority: spec.VRFUnreachableMetric})
	}
	return out
}

func macString(i *spec.Interface) string {
	if i.MAC == nil {
		return ""
	}
	return i.MAC.String()
}

// checkKinds asks the kernel, before anything is changed, whether it has
// every made kind the lab uses (see probeKind), and names the kernel
// option of each it lacks.
func checkKinds(l *spec.Lab) []string {
	first := map[spec.Kind]string{}
	var order []spec.Kind
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			if i.Kind.Made() && first[i.Kind] == "" {
				first[i.Kind] = fmt.Sprintf("nodes.%s.interfaces.%s", n.Name, i.Name)
				order = append(order, i.Kind)
			}
		}
	}
	var problems []string
	if where := filteringBridge(l); where != "" {
		if err := probeVLANFiltering(); err != nil {
			const opt = "CONFIG_BRIDGE_VLAN_FILTERING"
			problems = append(problems, fmt.Sprintf("%s filters VLANs, and %v: this kernel needs %s (%s)", where, err, opt, host.ConfigSays(opt, host.KernelConfig(opt))))
		}
	}
	for _, k := range order {
		if err := probeKind(k); err != nil {
			opt := kernelOption[k]
			problems = append(problems, fmt.Sprintf("%s is a %s, and %v: this kernel needs %s (%s)", first[k], k, err, opt[0], host.ConfigSays(opt[0], host.KernelConfig(opt[0]))))
		}
	}
	return problems
}

// probeKind creates a device of kind k in a scratch namespace that goes
// away afterwards (over a veth end there, for a macvlan or VLAN).
func probeKind(k spec.Kind) error {
	return ns.Scratch(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		lower := 0
		if k == spec.KindMacvlan || k == spec.KindVLAN {
			veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "p0"}, PeerName: "p1"}
			if err := h.LinkAdd(veth); err != nil {
				return fmt.Errorf("a veth pair to probe over: %w", err)
			}
			lower = veth.Index
		}
		i := &spec.Interface{Name: "probe", Kind: k, Macvlan: &spec.Macvlan{Mode: "bridge"}, VLAN: &spec.VLAN{ID: 1}, Bond: &spec.Bond{Mode: "balance-rr"}, VRF: &spec.VRF{Table: 10}}
		err = h.LinkAdd(madeLink(i, func(string) int { return lower }))
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("the kernel has no %s devices", k)
		}
		return err
	})
}

// filteringBridge names the first bridge of the lab with vlan_filtering,
// "" when there is none.
func filteringBridge(l *spec.Lab) string {
	for _, n := range l.Nodes {
		for _, b := range n.Bridges {
			if b.VLANFiltering {
				return fmt.Sprintf("nodes.%s.bridges.%s", n.Name, b.Name)
			}
		}
	}
	return ""
}

// probeVLANFiltering creates a VLAN-filtering bridge in a scratch
// namespace that goes away afterwards.
func probeVLANFiltering() error {
	return ns.Scratch(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		on := true
		err = h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "probe"}, VlanFiltering: &on})
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("the kernel's bridges do not filter VLANs")
		}
		return err
	})
}
