package probe_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/probe"
)

// TestPrivilegedEcho probes IPv4 and IPv6 across a veth pair, an address
// nobody has (no reply), and a destination without a route (the kernel
// refuses to send).
func TestPrivilegedEcho(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	name := labtest.Name("p")
	l := labdeploy.Deploy(t, labtest.Rename([]byte(`name: x
nodes:
  a: {interfaces: {e0: {addresses: [10.7.0.1/24, "fd00:7::1/64"]}}}
  b: {interfaces: {e0: {addresses: [10.7.0.2/24, "fd00:7::2/64"]}}}
links: [{endpoints: [a:e0, b:e0]}]
`), name))
	a, err := ns.Open(ns.DefaultDir, l.Namespace("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, c := range []struct {
		dst      string
		answered bool
		sendErr  bool
	}{
		{"10.7.0.2", true, false},
		{"fd00:7::2", true, false},
		{"10.7.0.9", false, false},  // on-link, nobody answers ARP
		{"fd00:7::9", false, false}, // nobody answers neighbour discovery
		{"10.99.0.1", false, true},  // no route at all
	} {
		r, err := probe.Echo(a, netip.MustParseAddr(c.dst), 3, 300*time.Millisecond, true)
		if err != nil {
			t.Fatalf("%s: %v", c.dst, err)
		}
		if r.OK() != c.answered || (r.Err != nil) != c.sendErr {
			t.Errorf("%s: %+v, want answered %v, send error %v", c.dst, r, c.answered, c.sendErr)
		}
		if c.answered && (r.Received != 3 || r.Sent != 3 || r.RTT <= 0) {
			t.Errorf("%s: %+v, want 3 of 3 with an RTT", c.dst, r)
		}
	}
}
