package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// deployScript renders the iproute2 shell script a user would write for the
// lab: the same namespaces, veth pairs (each end created in its namespace),
// bridges, forwarding, sysctls, addresses and routes.
func deployScript(l *spec.Lab) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("set -e")
	for _, n := range l.Nodes {
		w("ip netns add %s", l.Namespace(n.Name))
		w("ip -n %s link set lo up", l.Namespace(n.Name))
	}
	for _, lk := range l.Links {
		na, nb := l.Namespace(lk.A.Node), l.Namespace(lk.B.Node)
		a, bi := l.Node(lk.A.Node).Interface(lk.A.Interface), l.Node(lk.B.Node).Interface(lk.B.Interface)
		w("ip -n %s link add %s%s type veth peer name %s netns %s%s", na, a.Name, linkOpts(a.MAC.String(), a.MTU), bi.Name, nb, linkOpts(bi.MAC.String(), bi.MTU))
		w("ip -n %s link set dev %s up", na, a.Name)
		w("ip -n %s link set dev %s up", nb, bi.Name)
	}
	for _, n := range l.Nodes {
		ns := l.Namespace(n.Name)
		for _, br := range n.Bridges {
			w("ip -n %s link add %s%s type bridge", ns, br.Name, linkOpts(br.MAC.String(), br.MTU))
			for _, p := range br.Ports {
				w("ip -n %s link set dev %s master %s", ns, p, br.Name)
			}
			w("ip -n %s link set dev %s up", ns, br.Name)
		}
		if n.Forwarding.IPv4 {
			w("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1", ns)
		}
		if n.Forwarding.IPv6 {
			w("ip netns exec %s sysctl -qw net.ipv6.conf.all.forwarding=1", ns)
		}
		for _, s := range n.Sysctls {
			w("ip netns exec %s sysctl -qw %s=%s", ns, s.Key, s.Value)
		}
	}
	for _, n := range l.Nodes {
		ns := l.Namespace(n.Name)
		for _, i := range n.Interfaces {
			for _, a := range i.Addresses {
				w("ip -n %s addr add %s dev %s", ns, a, i.Name)
			}
		}
		for _, br := range n.Bridges {
			for _, a := range br.Addresses {
				w("ip -n %s addr add %s dev %s", ns, a, br.Name)
			}
		}
	}
	for _, n := range l.Nodes {
		for _, r := range n.Routes {
			w("ip -n %s route add %s", l.Namespace(n.Name), routeArgs(r))
		}
	}
	return b.String()
}

// destroyScript removes the lab's namespaces, as a user would.
func destroyScript(l *spec.Lab) string {
	var b strings.Builder
	for _, n := range l.Nodes {
		fmt.Fprintf(&b, "ip netns del %s\n", l.Namespace(n.Name))
	}
	return b.String()
}

func linkOpts(mac string, mtu int) string {
	s := ""
	if mac != "" {
		s += " address " + mac
	}
	if mtu != 0 {
		s += fmt.Sprintf(" mtu %d", mtu)
	}
	return s
}

func routeArgs(r *spec.Route) string {
	s := r.To.String()
	if r.To == netip.MustParsePrefix("0.0.0.0/0") {
		s = "default"
	}
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
