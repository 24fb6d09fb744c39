package lab

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/nslab/nslab/topology/lab/live"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Bridges inside nodes, with some of the node's veth ends as ports.

func bridgeSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, b := range n.Bridges {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("create bridge %s:%s with ports %s", n.Name, b.Name, strings.Join(b.Ports, ", ")),
				Shell: func() []string { return shBridge(l, n, b) },
				Do:    func(d *deployer) error { return d.createBridge(n, b) },
				Makes: []string{n.Name + ":" + b.Name},
				Needs: append(interfacesOf(n.Name, b.Ports), n.Name),
				Undo:  func(d *deployer) error { return d.deleteLink(n.Name, b.Name) },
			})
		}
	}
	return steps
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
	if b.VLANFiltering {
		br.VlanFiltering = &b.VLANFiltering
	}
	if err := h.LinkAdd(br); err != nil {
		if b.VLANFiltering && errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("create bridge %s:%s with vlan_filtering: %w (this kernel's bridges do not filter VLANs: it needs CONFIG_BRIDGE_VLAN_FILTERING)", n.Name, b.Name, err)
		}
		return fmt.Errorf("create bridge %s:%s: %w%s", n.Name, b.Name, err, missingKind(err, "bridge", "CONFIG_BRIDGE", "bridge"))
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
		if err := live.WaitOperUp(h, port.Attrs().Index, live.PortUpTimeout); err != nil {
			return fmt.Errorf("port %s:%s of bridge %s: %w", n.Name, p, b.Name, err)
		}
		if err := h.LinkSetMasterByIndex(port, br.Index); err != nil {
			return fmt.Errorf("add port %s:%s to bridge %s: %w", n.Name, p, b.Name, err)
		}
	}
	for _, v := range b.VLANs {
		if err := setPortVLANs(h, d.link(n.Name, v.Port), v); err != nil {
			return fmt.Errorf("VLANs of port %s:%s of bridge %s: %w", n.Name, v.Port, b.Name, err)
		}
	}
	if b.MTU != 0 {
		if err := h.LinkSetMTU(br, b.MTU); err != nil {
			return fmt.Errorf("set mtu %d on bridge %s:%s: %w", b.MTU, n.Name, b.Name, err)
		}
	}
	return nil
}

func shBridge(l *spec.Lab, n *spec.Node, br *spec.Bridge) []string {
	name := l.Namespace(n.Name)
	mac := ""
	if br.MAC != nil {
		mac = " address " + br.MAC.String()
	}
	filtering := ""
	if br.VLANFiltering {
		filtering = " vlan_filtering 1"
	}
	out := []string{
		fmt.Sprintf("ip -n %s link add %s%s up type bridge%s", name, br.Name, mac, filtering),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", name, br.Name, linkMarker(l.Name)),
	}
	for _, p := range br.Ports {
		out = append(out,
			fmt.Sprintf("wait_up %s %s", name, p),
			fmt.Sprintf("ip -n %s link set dev %s master %s", name, p, br.Name))
	}
	for _, v := range br.VLANs {
		out = append(out, shPortVLANs(name, v)...)
	}
	if br.MTU != 0 {
		out = append(out, fmt.Sprintf("ip -n %s link set dev %s mtu %d", name, br.Name, br.MTU))
	}
	return out
}

// setPortVLANs makes a port of a VLAN-filtering bridge a member of v's
// VLANs alone: out of the default VLAN 1, into the tagged ones, and into
// its PVID untagged.
//
// Equivalent to the lines of shPortVLANs.
func setPortVLANs(h *netlink.Handle, port netlink.Link, v spec.PortVLANs) error {
	if err := h.BridgeVlanDel(port, 1, false, false, false, true); err != nil {
		return fmt.Errorf("leave VLAN 1: %w", err)
	}
	for _, vid := range v.Tagged {
		if err := h.BridgeVlanAdd(port, uint16(vid), false, false, false, true); err != nil {
			return fmt.Errorf("join VLAN %d: %w", vid, err)
		}
	}
	if v.PVID != 0 {
		if err := h.BridgeVlanAdd(port, uint16(v.PVID), true, true, false, true); err != nil {
			return fmt.Errorf("join VLAN %d untagged: %w", v.PVID, err)
		}
	}
	return nil
}

func shPortVLANs(nsName string, v spec.PortVLANs) []string {
	out := []string{fmt.Sprintf("bridge -n %s vlan del dev %s vid 1", nsName, v.Port)}
	for _, vid := range v.Tagged {
		out = append(out, fmt.Sprintf("bridge -n %s vlan add dev %s vid %d", nsName, v.Port, vid))
	}
	if v.PVID != 0 {
		out = append(out, fmt.Sprintf("bridge -n %s vlan add dev %s vid %d pvid untagged", nsName, v.Port, v.PVID))
	}
	return out
}
