package lab

import (
	"fmt"

	"github.com/nslab/nslab/topology/lab/live"
	"github.com/nslab/nslab/topology/spec"
)

// One wait until every lab interface is operationally up, so that a deploy
// hands over a lab that is ready (and that inspect shows as up).

func waitSteps(l *spec.Lab, _ string) []Step {
	if len(l.Links) == 0 && !hasBridges(l) {
		return nil
	}
	return []Step{{
		Name:    "wait until every lab interface is operationally up",
		Shell:   func() []string { return shWaitUp(l) },
		Do:      func(d *deployer) error { return d.waitLinksUp() },
		Key:     waitKey,
		Follows: ":",
		NoUndo:  true,
	}}
}

func hasBridges(l *spec.Lab) bool {
	for _, n := range l.Nodes {
		if len(n.Bridges) > 0 {
			return true
		}
	}
	return false
}

// waitLinksUp returns once every veth end and bridge of the lab reports
// operational state up. The kernel updates that state asynchronously; a
// single-link RTM_GETLINK, as LinkByIndex sends, makes it catch up on that
// link at once on current kernels, and older ones are polled until the
// bound.
func (d *deployer) waitLinksUp() error {
	tunnels := tunnelEnds(d.lab)
	for ep, idx := range d.index {
		n := d.lab.Node(ep.Node)
		if ep.Interface == "lo" || idx == 0 || n == nil || n.Interface(ep.Interface) == nil && n.Bridge(ep.Interface) == nil {
			continue // not the lab's (an apply looked it up before taking it away)
		}
		if i := d.lab.Node(ep.Node).Interface(ep.Interface); i != nil && i.Kind == spec.KindVF {
			continue // a VF's link follows the PF's wire, not the lab
		}
		if tunnels[ep] {
			continue // a VXLAN device has no carrier: its state stays "unknown"
		}
		if err := live.WaitOperUp(d.handles[ep.Node], idx, live.PortUpTimeout); err != nil {
			return fmt.Errorf("interface %s: %w", ep, err)
		}
	}
	return nil
}

func shWaitUp(l *spec.Lab) []string {
	var out []string
	tunnels := tunnelEnds(l)
	for _, n := range l.Nodes {
		var devs []string
		for _, i := range n.Interfaces {
			if i.Kind != spec.KindLoopback && i.Kind != spec.KindVF && i.Kind != spec.KindVRF && !tunnels[spec.Endpoint{Node: n.Name, Interface: i.Name}] {
				devs = append(devs, i.Name)
			}
		}
		for _, b := range n.Bridges {
			devs = append(devs, b.Name)
		}
		for _, dev := range devs {
			out = append(out, fmt.Sprintf("wait_up %s %s", l.Namespace(n.Name), dev))
		}
	}
	return out
}
