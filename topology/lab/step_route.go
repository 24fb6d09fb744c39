package lab

import (
	"fmt"
	"net"

	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Static routes, last: their gateways must be on subnets that are up.

func routeSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, r := range n.Routes {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("add route %s in %s", r, n.Name),
				shell: func() []string { return []string{shRoute(l, n, r)} },
				do:    func(d *deployer) error { return d.addRoute(n, r) },
			})
		}
	}
	return steps
}

// addRoute adds a static route in node n's main table.
//
// Equivalent to: ip -n NS route add TO [via GW] [dev IF] [metric M]
func (d *deployer) addRoute(n *spec.Node, r *spec.Route) error {
	route := netlinkRoute(r, d.index[spec.Endpoint{Node: n.Name, Interface: r.Dev}])
	if err := d.handles[n.Name].RouteAdd(route); err != nil {
		return fmt.Errorf("add route %s in %s: %w", r, n.Name, err)
	}
	return nil
}

// netlinkRoute is route r as netlink takes it; devIndex is the ifindex of
// r.Dev (unused without one).
func netlinkRoute(r *spec.Route, devIndex int) *netlink.Route {
	route := &netlink.Route{Dst: ipNet(r.To), Priority: r.Metric}
	if r.Via.IsValid() {
		route.Gw = net.IP(r.Via.AsSlice())
	} else {
		route.Scope = netlink.SCOPE_LINK // on-link, as ip route add gives it
	}
	if r.Dev != "" {
		route.LinkIndex = devIndex
	}
	return route
}

func shRoute(l *spec.Lab, n *spec.Node, r *spec.Route) string {
	fam, to := "", r.To.String()
	if r.To.Addr().Is6() {
		fam = " -6"
	}
	if r.To.Bits() == 0 {
		to = "default"
	}
	s := fmt.Sprintf("ip -n %s%s route add %s", l.Namespace(n.Name), fam, to)
	if r.Via.IsValid() {
		s += " via " + r.Via.String()
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	if r.Metric != 0 {
		s += fmt.Sprintf(" metric %d", r.Metric)
	}
	return s
}
