package spec

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func mustRead(t *testing.T, name string) *Lab {
	t.Helper()
	l, err := ReadFile("../../examples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPathOfExamples(t *testing.T) {
	cases := []struct {
		file, from, to, hops, next string
	}{
		{"client-router-server.yaml", "ns1:veth1", "10.0.2.1", "ns1>veth1 veth1-peer>ns2>veth2 veth2-peer>ns3", "ns2:veth1-peer"},
		{"client-router-server.yaml", "ns3:veth2-peer", "10.0.1.1", "ns3>veth2-peer veth2>ns2>veth1-peer veth1>ns1", "ns2:veth2"},
		{"client-router-server.yaml", "ns1:veth1", "10.0.1.254", "ns1>veth1 veth1-peer>ns2", "ns2:veth1-peer"},
		{"pair.yaml", "ns1:veth1", "192.168.1.12", "ns1>veth1 veth2>ns2", "ns2:veth2"},
		{"switch.yaml", "h1:eth0", "192.168.9.12", "h1>eth0 p1>sw>p2(L2) eth0>h2", "h2:eth0"},
		{"switch.yaml", "h1:eth0", "192.168.9.1", "h1>eth0 br0>sw", "sw:br0"},
		{"sriov-vfs.yaml", "ns1:vf0", "192.168.1.12", "ns1>vf0 vf1>ns2", "ns2:vf1"},
	}
	for _, c := range cases {
		t.Run(c.file+" "+c.from+" "+c.to, func(t *testing.T) {
			l := mustRead(t, c.file)
			node, iface, _ := strings.Cut(c.from, ":")
			p, err := l.PathOf(Endpoint{node, iface}, netip.MustParseAddr(c.to), Flow{})
			if err != nil {
				t.Fatal(err)
			}
			if got := hops(p); got != c.hops || p.NextHop.String() != c.next {
				t.Errorf("path %s, next hop %s; want %s, %s", got, p.NextHop, c.hops, c.next)
			}
		})
	}
}

// hops renders a path as in>node>out with spaces between nodes.
func hops(p *Path) string {
	var parts []string
	for _, h := range p.Hops {
		s := h.Node
		if h.In != "" {
			s = h.In + ">" + s
		}
		if h.Out != "" {
			s += ">" + h.Out
		}
		if h.L2 {
			s += "(L2)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestPathErrors(t *testing.T) {
	crs := mustRead(t, "client-router-server.yaml")
	noFwd := mustRead(t, "client-router-server.yaml")
	noFwd.Node("ns2").Forwarding = Forwarding{}
	noRoute := mustRead(t, "client-router-server.yaml")
	noRoute.Node("ns1").Routes = nil
	cases := []struct {
		l        *Lab
		from, to string
		msg      string
	}{
		{crs, "ns1:veth1", "8.8.8.8", "no interface of the lab has address 8.8.8.8"},
		{crs, "ns1:veth1", "10.0.1.1", "address of the sender ns1 itself"},
		{noFwd, "ns1:veth1", "10.0.2.1", "crosses node ns2, which does not forward IPv4"},
		{noRoute, "ns1:veth1", "10.0.2.1", "node ns1 has no route to 10.0.2.1"},
		{crs, "ns2:veth2", "10.0.1.1", "ns2 routes 10.0.1.1 out of veth1-peer, not veth2"},
	}
	for _, c := range cases {
		node, iface, _ := strings.Cut(c.from, ":")
		_, err := c.l.PathOf(Endpoint{node, iface}, netip.MustParseAddr(c.to), Flow{})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s -> %s: want %q, got %v", c.from, c.to, c.msg, err)
		}
	}
}

// TestRoutingLoop: two routers pointing at each other.
func TestRoutingLoop(t *testing.T) {
	y := `name: loop
nodes:
  a:
    interfaces: {e0: {addresses: [10.0.0.1/24]}}
    routes: [{to: default, via: 10.0.0.2}]
  r1:
    forwarding: true
    interfaces: {e0: {addresses: [10.0.0.2/24]}, e1: {addresses: [10.0.1.1/24]}}
    routes: [{to: 10.9.0.0/16, via: 10.0.1.2}]
  r2:
    forwarding: true
    interfaces: {e0: {addresses: [10.0.1.2/24]}, e1: {addresses: [10.9.0.1/24]}}
    routes: [{to: 10.9.9.0/24, via: 10.0.1.1}]
  b:
    interfaces: {e0: {addresses: [10.9.9.9/24]}}
links:
  - endpoints: [a:e0, r1:e0]
  - endpoints: [r1:e1, r2:e0]
  - endpoints: [r2:e1, b:e0]
`
	l, err := Parse("loop.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.PathOf(Endpoint{"a", "e0"}, netip.MustParseAddr("10.9.9.9"), Flow{})
	if err == nil || !strings.Contains(err.Error(), "routing loop") {
		t.Fatalf("got %v", err)
	}
}

func TestTrafficRules(t *testing.T) {
	base := string(mustSource(t))
	cases := trafficCases
	for _, c := range cases {
		y := strings.Replace(base, c.edit, c.where, 1)
		if y == base {
			t.Fatalf("edit %q did not apply", c.edit)
		}
		_, err := Parse("x.yaml", []byte(y))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("want %q, got %v", c.msg, err)
		}
	}
}

var trafficCases = []struct{ edit, where, msg string }{
	{"    rate: max\n", "    rate: lots\n", "rate \"lots\""},
	{"    duration: 10s\n", "", "give count: or duration:"},
	{"    to: 10.0.2.1\n    frame: 64\n", "    to: 10.0.2.1\n    frame: 40\n", "frame 40 bytes"},
	{"    from: ns1:veth1\n    to: 10.0.2.1\n    frame: 64\n", "    from: ns1:veth9\n    to: 10.0.2.1\n    frame: 64\n", "ns1:veth9 is not a linked interface"},
	{"    to: 10.0.2.1\n    frame: 64\n", "    to: 10.0.3.1\n    frame: 64\n", "no interface of the lab has address 10.0.3.1"},
	{"    threads: 1\n", "    threads: 1\n    engine: dpdk\n", "engine \"dpdk\""},
	{"    threads: 1\n", "    threads: 1\n    src_ports: 9-1\n", "ports \"9-1\""},
	{"  - name: sweep ", "  - name: forward ", "traffic run \"forward\" is already defined"},
}

func mustSource(t *testing.T) []byte {
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestTraceHops checks what nslab path prints: per routing hop the
// next-hop address (gateway or the destination on-link) and the interface
// holding it; a node without interface picks its egress; a local address.
func TestTraceHops(t *testing.T) {
	l := mustRead(t, "two-routers.yaml")
	p, err := l.Trace(Endpoint{Node: "client"}, netip.MustParseAddr("10.2.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range p.Hops {
		got = append(got, fmt.Sprintf("%s %s>%s via %v gw=%v next %s", h.Node, h.In, h.Out, h.Via, h.Gateway, h.Next))
	}
	want := []string{
		"client >eth0 via 10.1.0.1 gw=true next r1:eth0",
		"r1 eth0>eth1 via 10.12.0.2 gw=true next r2:eth0",
		"r2 eth0>eth1 via 10.2.0.2 gw=false next server:eth0",
		"server eth0> via invalid IP gw=false next ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hops:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p.NextHop != (Endpoint{"r1", "eth0"}) || p.Dest != (Endpoint{"server", "eth0"}) || p.Local {
		t.Errorf("next hop %s, dest %s, local %v", p.NextHop, p.Dest, p.Local)
	}
	local, err := l.Trace(Endpoint{Node: "r1"}, netip.MustParseAddr("10.12.0.1"))
	if err != nil || !local.Local || len(local.Hops) != 1 || local.Dest != (Endpoint{"r1", "eth1"}) {
		t.Errorf("local: %+v %v", local, err)
	}
	if _, err := l.PathOf(Endpoint{"r1", "eth1"}, netip.MustParseAddr("10.12.0.1"), Flow{}); err == nil {
		t.Error("PathOf (bench) accepts a sender's own address")
	}
	if src := l.SourceOf(Endpoint{"r1", "eth1"}, netip.MustParseAddr("10.2.0.2")); src != netip.MustParseAddr("10.12.0.1") {
		t.Errorf("source %s, want the egress's address 10.12.0.1", src)
	}
}
