package xdpfwd_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/xdpfwd"
)

// routerPorts are ns2's two interfaces in the client-router-server lab,
// with their peers in ns1 and ns3.
func routerPorts(t *testing.T, r *lab.Running) []xdpfwd.Port {
	t.Helper()
	var out []xdpfwd.Port
	for _, e := range [][2]spec.Endpoint{
		{{Node: "ns2", Interface: "veth1-peer"}, {Node: "ns1", Interface: "veth1"}},
		{{Node: "ns2", Interface: "veth2"}, {Node: "ns3", Interface: "veth2-peer"}},
	} {
		a, err := r.Link(e[0])
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Link(e[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, xdpfwd.Port{Index: a.Attrs().Index, PeerNS: r.Node(e[1].Node).NS, PeerIndex: b.Attrs().Index, PeerName: b.Attrs().Name})
	}
	return out
}

// TestPrivilegedForward: with the program on the router's interfaces,
// pings cross it through XDP (requests and replies counted as forwarded),
// the first ARP goes to the stack, and every frame it saw is forwarded,
// passed or dropped; once detached, nothing of it is left.
func TestPrivilegedForward(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	l := labdeploy.Example(t, "client-router-server.yaml", "x")
	r := labdeploy.Open(t, l)
	ports := routerPorts(t, r)
	router := r.Node("ns2")
	if err := xdpfwd.Attach(router.NS, ports); err != nil {
		t.Fatal(err)
	}
	if got, err := labtest.Ping(ns.DefaultDir, l.Namespace("ns1"), netip.MustParseAddr("10.0.2.1"), 20, 200*time.Millisecond); err != nil || got != 20 {
		c, cerr := xdpfwd.Read(router.Handle, ports[0].Index)
		t.Fatalf("%d of 20 pings answered through XDP (%v); counters %v (%v)", got, err, c, cerr)
	}
	c, err := xdpfwd.Read(router.Handle, ports[0].Index)
	if err != nil || c == nil {
		t.Fatalf("counters: %v, %v", c, err)
	}
	t.Logf("counters %v", c)
	if c.Forwarded() < 38 || c[1] == 0 || c.Entered() != c.Forwarded()+c.Passed()+c.Dropped() || c.Dropped() != 0 {
		t.Errorf("counters %v: want about 40 forwarded (the requests and the replies), ARP passed, none dropped", c)
	}
	if err := xdpfwd.Detach(router.NS, ports); err != nil {
		t.Fatal(err)
	}
	if c, err := xdpfwd.Read(router.Handle, ports[1].Index); err != nil || c != nil {
		t.Errorf("after detach: %v, %v", c, err)
	}
}
