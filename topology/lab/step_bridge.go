package lab

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Bridges inside nodes, with some of the node's veth ends as ports.

func bridgeSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, b := range n.Bridges {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("create bridge %s:%s with ports %s", n.Name, b.Name, strings.Join(b.Ports, ", ")),
				shell: func() []string { return shBridge(l, n, b) },
				do:    func(d *deployer) error { return d.createBridge(n, b) },
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

func shBridge(l *spec.Lab, n *spec.Node, br *spec.Bridge) []string {
	name := l.Namespace(n.Name)
	mac := ""
	if br.MAC != nil {
		mac = " address " + br.MAC.String()
	}
	out := []string{
		fmt.Sprintf("ip -n %s link add %s%s up type bridge", name, br.Name, mac),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", name, br.Name, linkMarker(l.Name)),
	}
	for _, p := range br.Ports {
		out = append(out,
			fmt.Sprintf("wait_up %s %s", name, p),
			fmt.Sprintf("ip -n %s link set dev %s master %s", name, p, br.Name))
	}
	if br.MTU != 0 {
		out = append(out, fmt.Sprintf("ip -n %s link set dev %s mtu %d", name, br.Name, br.MTU))
	}
	return out
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
