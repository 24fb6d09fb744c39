package lab

import (
	"fmt"
	"net/netip"

	"github.com/nslab/nslab/topology/lab/live"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Addresses of interfaces and bridges.

func addressSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	add := func(n *spec.Node, dev string, a netip.Prefix) {
		steps = append(steps, Step{
			Name:  fmt.Sprintf("add address %s to %s:%s", a, n.Name, dev),
			Shell: func() []string { return []string{shAddress(l, n, dev, a)} },
			Do:    func(d *deployer) error { return d.addAddress(n, dev, a) },
			Needs: []string{n.Name + ":" + dev},
			Undo:  func(d *deployer) error { return d.delAddress(n, dev, a) },
		})
	}
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			for _, a := range i.Addresses {
				add(n, i.Name, a)
			}
		}
		for _, b := range n.Bridges {
			for _, a := range b.Addresses {
				add(n, b.Name, a)
			}
		}
	}
	return steps
}

// addAddress assigns an address to an interface or bridge of node n. IPv6
// addresses skip duplicate address detection, so they are usable at once.
//
// Equivalent to: ip -n NS addr add A dev IF [nodad]
func (d *deployer) addAddress(n *spec.Node, ifname string, a netip.Prefix) error {
	addr := &netlink.Addr{IPNet: live.IPNet(a)}
	if a.Addr().Is6() {
		addr.Flags = unix.IFA_F_NODAD
	}
	if err := d.handles[n.Name].AddrAdd(d.link(n.Name, ifname), addr); err != nil {
		return fmt.Errorf("add address %s to %s:%s: %w", a, n.Name, ifname, err)
	}
	return nil
}

func shAddress(l *spec.Lab, n *spec.Node, dev string, a netip.Prefix) string {
	opt := ""
	switch {
	case a.Addr().Is6():
		opt = " nodad" // nslab adds IPv6 addresses without DAD
	case a.Bits() < 31:
		opt = " brd +" // netlink's AddrAdd sets the broadcast address too
	}
	return fmt.Sprintf("ip -n %s addr add %s%s dev %s", l.Namespace(n.Name), a, opt, dev)
}
