package walk

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

func mustRead(t *testing.T, name string) *spec.Lab {
	t.Helper()
	l, err := spec.ReadFile("../../examples/" + name)
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
			p, err := PathOf(l, spec.Endpoint{Node: node, Interface: iface}, netip.MustParseAddr(c.to), spec.Flow{})
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
	noFwd.Node("ns2").Forwarding = spec.Forwarding{}
	noRoute := mustRead(t, "client-router-server.yaml")
	noRoute.Node("ns1").Routes = nil
	cases := []struct {
		l        *spec.Lab
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
		_, err := PathOf(c.l, spec.Endpoint{Node: node, Interface: iface}, netip.MustParseAddr(c.to), spec.Flow{})
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
	l, err := spec.Parse("loop.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	_, err = PathOf(l, spec.Endpoint{Node: "a", Interface: "e0"}, netip.MustParseAddr("10.9.9.9"), spec.Flow{})
	if err == nil || !strings.Contains(err.Error(), "routing loop") {
		t.Fatalf("got %v", err)
	}
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
	p, err := Trace(l, spec.Endpoint{Node: "client"}, netip.MustParseAddr("10.2.0.2"))
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
	if p.NextHop != (spec.Endpoint{Node: "r1", Interface: "eth0"}) || p.Dest != (spec.Endpoint{Node: "server", Interface: "eth0"}) || p.Local {
		t.Errorf("next hop %s, dest %s, local %v", p.NextHop, p.Dest, p.Local)
	}
	local, err := Trace(l, spec.Endpoint{Node: "r1"}, netip.MustParseAddr("10.12.0.1"))
	if err != nil || !local.Local || len(local.Hops) != 1 || local.Dest != (spec.Endpoint{Node: "r1", Interface: "eth1"}) {
		t.Errorf("local: %+v %v", local, err)
	}
	if _, err := PathOf(l, spec.Endpoint{Node: "r1", Interface: "eth1"}, netip.MustParseAddr("10.12.0.1"), spec.Flow{}); err == nil {
		t.Error("PathOf (bench) accepts a sender's own address")
	}
	if src := SourceOf(l, spec.Endpoint{Node: "r1", Interface: "eth1"}, netip.MustParseAddr("10.2.0.2")); src != netip.MustParseAddr("10.12.0.1") {
		t.Errorf("source %s, want the egress's address 10.12.0.1", src)
	}
}

// TestTraceThroughNAT: the path says where NAT rewrites the packet, and
// which firewall rule drops it.
func TestTraceThroughNAT(t *testing.T) {
	l, err := spec.Parse("x.yaml", []byte(natLab))
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	p, err := Trace(l, spec.Endpoint{Node: "lan"}, a("172.30.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	if gw := p.Hops[1]; gw.SNAT != a("172.30.0.1") || gw.SNATBy != "nodes.gw.nat[0]" || p.SourceAtDest(a("192.168.10.2")) != a("172.30.0.1") {
		t.Errorf("gw hop %+v", gw)
	}
	if r := p.Restore(a("192.168.10.2")); r["gw"] != a("192.168.10.2") || len(r) != 1 {
		t.Errorf("Restore = %v", r)
	}
	back, err := TraceFlow(l, spec.Endpoint{Node: "wan"}, a("172.30.0.1"), spec.Flow{Reply: true, Restore: p.Restore(a("192.168.10.2"))})
	if err != nil || back.Dest != (spec.Endpoint{Node: "lan", Interface: "eth0"}) {
		t.Errorf("the reply goes to %v (%v), want lan:eth0", back, err)
	}
	p, err = TraceFlow(l, spec.Endpoint{Node: "wan"}, a("172.30.0.1"), spec.Flow{Proto: "tcp", Port: 8080})
	if err != nil || p.Dest != (spec.Endpoint{Node: "lan", Interface: "eth0"}) || p.Hops[1].DNAT != netip.MustParseAddrPort("192.168.10.2:80") || p.Hops[1].DNATBy != "nodes.gw.nat[2]" {
		t.Errorf("tcp 8080 to gw: %+v, %v", p, err)
	}
	_, err = TraceFlow(l, spec.Endpoint{Node: "wan"}, a("172.30.0.1"), spec.Flow{Proto: "udp", Port: 53})
	var fe *FilteredError
	if !errors.As(err, &fe) || fe.Node != "gw" || fe.Rule != "nodes.gw.firewall" {
		t.Errorf("udp 53 dnat'd into the LAN: want gw's policy to drop it, got %v", err)
	}
	_, err = TraceFlow(l, spec.Endpoint{Node: "wan"}, a("172.30.0.1"), spec.Flow{Reply: true})
	if err != nil {
		t.Errorf("a reply to gw itself: %v", err)
	}
}

// pathKindsLab has each made kind on a path: macvlans and a VLAN over
// one wire, a bond over two, a VRF in a router, a VLAN-filtering bridge.
const pathKindsLab = `name: t
nodes:
  a:
    interfaces:
      e0: {}
      m1: {macvlan: {parent: e0}, addresses: [10.0.0.11/24]}
      v10: {vlan: {parent: e0, id: 10}, addresses: [10.10.0.1/24]}
      v20: {vlan: {parent: e0, id: 20}, addresses: [10.20.0.1/24]}
      bd: {bond: {ports: [e1, e2], mode: active-backup}, addresses: [10.30.0.1/24]}
  b:
    interfaces:
      e0: {addresses: [10.0.0.2/24]}
      v10: {vlan: {parent: e0, id: 10}, addresses: [10.10.0.2/24]}
      w20: {vlan: {parent: e0, id: 21}, addresses: [10.20.0.2/24]}
    bridges:
      br0: {ports: [e1, e2], addresses: [10.30.0.2/24]}
  r:
    forwarding: true
    interfaces:
      e1: {addresses: [10.1.0.1/24]}
      e2: {addresses: [10.2.0.1/24]}
      red: {vrf: {table: 10, ports: [e1]}}
  h1:
    interfaces:
      e0: {addresses: [10.1.0.2/24]}
    routes: [{to: default, via: 10.1.0.1}]
  h2:
    interfaces:
      e0: {addresses: [10.2.0.2/24]}
    routes: [{to: default, via: 10.2.0.1}]
links:
  - endpoints: [a:e0, b:e0]
  - endpoints: [a:e1, b:e1]
  - endpoints: [a:e2, b:e2]
  - endpoints: [r:e1, h1:e0]
  - endpoints: [r:e2, h2:e0]
`

// TestPathThroughKinds walks the packet through each made kind: what the
// kernel would deliver, and what it would not (another VLAN ID, across
// a VRF).
func TestPathThroughKinds(t *testing.T) {
	l, err := spec.Parse("k.yaml", []byte(pathKindsLab))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"b", "10.0.0.11", true},  // to a macvlan over the far end
		{"a", "10.10.0.2", true},  // VLAN 10 to VLAN 10
		{"a", "10.20.0.2", false}, // VLAN 20 to VLAN 21
		{"a", "10.30.0.2", true},  // bond to a bridge of its two wires
		{"b", "10.30.0.1", true},  // and back
		{"h1", "10.1.0.1", true},  // to the VRF's port
		{"h1", "10.2.0.2", false}, // across the VRF: its table has no route
		{"h2", "10.1.0.2", false}, // r's main table has no route to the VRF's port's subnet
	} {
		p, err := Trace(l, spec.Endpoint{Node: c.from}, netip.MustParseAddr(c.to))
		if (err == nil) != c.ok {
			t.Errorf("%s -> %s: %v (path %v); want reachable %v", c.from, c.to, err, p, c.ok)
		}
	}
}

// natLab is topology/spec's NAT router between a LAN and a WAN.
var natLab = func() string {
	data, err := os.ReadFile("../spec/testdata/nat-lab.yaml")
	if err != nil {
		panic(err)
	}
	return string(data)
}()

// TestCheckPaths: CheckPaths keeps a traffic run whose destination the
// file's routes do not reach in Unrouted, at the run's to: with its place
// in the file (the deployed lab's kernels may reach it: exec lines,
// daemons and users add addresses and routes).
func TestCheckPaths(t *testing.T) {
	data := strings.Replace(string(mustSource(t)), "    to: 10.0.2.1\n    frame: 64\n", "    to: 10.0.3.1\n    frame: 64\n", 1)
	l, err := spec.Parse("x.yaml", []byte(data))
	if err == nil {
		CheckPaths(l)
	}
	if err != nil || !strings.Contains(l.Unrouted.Error(), "x.yaml:") || len(l.Unrouted) != 1 || !strings.Contains(l.Unrouted.Error(), "traffic[0].to: no interface of the lab has address 10.0.3.1") {
		t.Errorf("a run to an address of no interface: %v, unrouted %v", err, l.Unrouted)
	}
}
