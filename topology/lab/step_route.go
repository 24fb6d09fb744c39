package lab

import (
	"fmt"

	"github.com/nslab/nslab/topology/lab/live"
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
				Shell: func() []string { return []string{shRoute(l, n, r)} },
				Do:    func(d *deployer) error { return d.addRoute(n, r) },
				Needs: []string{n.Name + ":*"},
				Undo:  func(d *deployer) error { return d.delRoute(n, r) },
			})
		}
	}
	return steps
}

// addRoute adds a static route in node n's main table (or the route's).
//
// Equivalent to: ip -n NS route add TO [via GW] [dev IF] [metric M] [table T]
func (d *deployer) addRoute(n *spec.Node, r *spec.Route) error {
	route := live.Route(r, d.ifindex(n.Name, r.Dev))
	if err := d.handles[n.Name].RouteAdd(route); err != nil {
		return fmt.Errorf("add route %s in %s: %w", r, n.Name, err)
	}
	return nil
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
	if r.Table != 0 {
		s += fmt.Sprintf(" table %d", r.Table)
	}
	return s
}

// Policy routing rules, after the routes of the tables they name.

func ruleSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, r := range n.Rules {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("add rule %s in %s", r, n.Name),
				Shell: func() []string { return []string{shRule(l, n, r)} },
				Do:    func(d *deployer) error { return d.addRule(n, r) },
				Needs: []string{n.Name},
				Undo:  func(d *deployer) error { return d.delRule(n, r) },
			})
		}
	}
	return steps
}

// addRule adds a policy routing rule in node n.
//
// Equivalent to: ip -n NS rule add [from P] [to P] [iif I] [oif O] table T priority N
func (d *deployer) addRule(n *spec.Node, r *spec.Rule) error {
	if err := d.handles[n.Name].RuleAdd(netlinkRule(r)); err != nil {
		return fmt.Errorf("add rule %s in %s: %w", r, n.Name, err)
	}
	return nil
}

// netlinkRule is rule r as netlink takes it.
func netlinkRule(r *spec.Rule) *netlink.Rule {
	rule := netlink.NewRule()
	rule.Family, rule.Table, rule.Priority = netlink.FAMILY_V4, r.Table, r.Priority
	if r.Is6() {
		rule.Family = netlink.FAMILY_V6
	}
	if r.From.IsValid() {
		rule.Src = live.IPNet(r.From)
	}
	if r.To.IsValid() {
		rule.Dst = live.IPNet(r.To)
	}
	rule.IifName, rule.OifName = r.IIF, r.OIF
	return rule
}

func shRule(l *spec.Lab, n *spec.Node, r *spec.Rule) string {
	fam := ""
	if r.Is6() {
		fam = " -6"
	}
	return fmt.Sprintf("ip -n %s%s rule add %s", l.Namespace(n.Name), fam, r)
}
