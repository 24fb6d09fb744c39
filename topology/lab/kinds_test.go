package lab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// macvlanLab has two macvlans over one lab interface of a, each with an
// address of the link's subnet.
const macvlanLab = `name: x
nodes:
  a:
    interfaces:
      e0: {}
      m1: {macvlan: {parent: e0}, addresses: [10.0.0.11/24]}
      m2: {macvlan: {parent: e0, mode: bridge}, addresses: [10.0.0.12/24]}
  b:
    interfaces:
      e0: {addresses: [10.0.0.2/24]}
links:
  - endpoints: [a:e0, b:e0]
`

// TestPrivilegedMacvlan deploys two macvlans over one veth end and pings
// each from across the link; the kernel has them as macvlans of that end,
// in bridge mode, with the MACs the file derives.
func TestPrivilegedMacvlan(t *testing.T) {
	labtest.CoveredOnHost(t)
	needKind(t, spec.KindMacvlan)
	f := newFixture(t, macvlanLab)
	f.deploy()
	f.ping("b", "10.0.0.11")
	f.ping("b", "10.0.0.12")
	h := f.handle("a")
	e0, err := h.LinkByName("e0")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m1", "m2"} {
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := l.(*netlink.Macvlan)
		if !ok || m.Mode != netlink.MACVLAN_MODE_BRIDGE || m.ParentIndex != e0.Attrs().Index {
			t.Errorf("%s is %s mode %v over ifindex %d; want a bridge-mode macvlan of e0 (%d)", name, l.Type(), modeOf(l), l.Attrs().ParentIndex, e0.Attrs().Index)
		}
		if want := f.lab.Node("a").Interface(name).MAC; l.Attrs().HardwareAddr.String() != want.String() {
			t.Errorf("%s has MAC %s; the file derives %s", name, l.Attrs().HardwareAddr, want)
		}
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	if k := ifKind(info, "a", "m1"); k != "macvlan" {
		t.Errorf("inspect shows a:m1 as %q; want macvlan", k)
	}
}

func modeOf(l netlink.Link) any {
	if m, ok := l.(*netlink.Macvlan); ok {
		return m.Mode
	}
	return "-"
}

func ifKind(info *inspect.LabInfo, node, ifc string) string {
	for _, n := range info.Nodes {
		for _, i := range n.Interfaces {
			if n.Node == node && i.Name == ifc {
				return i.Kind
			}
		}
	}
	return ""
}

// TestPrivilegedPolicyRouting deploys examples/policy-routing.yaml: its
// rule sends what comes from 10.0.2.0/24 out of the router's second
// uplink. The kernel's own route lookup (ip route get in the router),
// the file's path and the uplinks' counters under a ping all say so, and
// the first subnet keeps the main table's uplink.
func TestPrivilegedPolicyRouting(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, "policy-routing.yaml")
	f.deploy()
	for _, c := range []struct{ from, iif, want string }{{"10.0.2.1", "e2", "u2"}, {"10.0.1.1", "e1", "u1"}} {
		if got := routeGet(t, f, "r", "10.9.0.1", c.from, c.iif); got != c.want {
			t.Errorf("the router sends 10.9.0.1 from %s out of %s; want %s", c.from, got, c.want)
		}
	}
	for _, c := range []struct{ host, want string }{{"h2", "u2"}, {"h1", "u1"}} {
		p, err := walk.Trace(f.lab, spec.Endpoint{Node: c.host}, netip.MustParseAddr("10.9.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		if p.Hops[1].Node != "r" || p.Hops[1].Out != c.want {
			t.Errorf("path from %s leaves the router by %+v; want %s", c.host, p.Hops[1], c.want)
		}
	}
	h := f.handle("r")
	before := txPackets(t, h, "u1", "u2")
	got, err := f.pings("h2", "10.9.0.1")
	if err != nil || got != 3 {
		t.Fatalf("ping from h2: %d of 3 (%v)", got, err)
	}
	after := txPackets(t, h, "u1", "u2")
	if d2, d1 := after["u2"]-before["u2"], after["u1"]-before["u1"]; d2 < 3 || d1 >= 3 {
		t.Errorf("3 echoes from h2 left r by u2 %d times and by u1 %d times; want all by u2", d2, d1)
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	if rules := info.Nodes[2].Rules; len(rules) != 1 || rules[0].Table != 100 || rules[0].From != "10.0.2.0/24" || rules[0].Priority != 32765 {
		t.Errorf("inspect shows r's rules as %+v; want from 10.0.2.0/24 table 100 priority 32765", rules)
	}
}

// routeGet is the egress `ip route get DST from SRC iif IIF` gives inside
// a node (iproute2 when installed, else netlink's same request).
func routeGet(t *testing.T, f *fixture, node, dst, src, iif string) string {
	t.Helper()
	if _, err := exec.LookPath("ip"); err == nil {
		out, err := exec.Command("ip", "netns", "exec", f.ns(node), "ip", "route", "get", dst, "from", src, "iif", iif).CombinedOutput()
		if err != nil {
			t.Fatalf("ip route get: %v: %s", err, out)
		}
		fields := strings.Fields(string(out))
		for i, w := range fields {
			if w == "dev" && i+1 < len(fields) {
				return fields[i+1]
			}
		}
		t.Fatalf("ip route get said no dev: %s", out)
	}
	h := f.handle(node)
	routes, err := h.RouteGetWithOptions(net.ParseIP(dst), &netlink.RouteGetOptions{SrcAddr: net.ParseIP(src), Iif: iif})
	if err != nil || len(routes) == 0 {
		t.Fatalf("route get %s: %v", dst, err)
	}
	l, err := h.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Name
}

func txPackets(t *testing.T, h *netlink.Handle, names ...string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, n := range names {
		l, err := h.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = l.Attrs().Statistics.TxPackets
	}
	return out
}

// kindsLab has every link kind this machine's kernel may lack: an 802.1Q
// VLAN, an active-backup bond, a VRF and a VLAN-filtering bridge.
const kindsLab = `name: x
nodes:
  a:
    interfaces:
      e0: {addresses: [10.0.0.1/24]}
      v10: {vlan: {parent: e0, id: 10}, addresses: [10.10.0.1/24]}
      bd: {bond: {ports: [e1, e2], mode: active-backup}, addresses: [10.20.0.1/24]}
  b:
    interfaces:
      e0: {addresses: [10.0.0.2/24]}
      v10: {vlan: {parent: e0, id: 10}, addresses: [10.10.0.2/24]}
    bridges:
      br0: {ports: [e1, e2], addresses: [10.20.0.2/24]}
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
  sw:
    bridges:
      br0: {ports: [p1, p2, p3], vlan_filtering: true, vlans: {p1: {pvid: 10}, p2: {pvid: 10}, p3: {pvid: 20}}}
  s1:
    interfaces:
      e0: {addresses: [10.5.0.1/24]}
  s2:
    interfaces:
      e0: {addresses: [10.5.0.2/24]}
  s3:
    interfaces:
      e0: {addresses: [10.5.0.3/24]}
links:
  - endpoints: [a:e0, b:e0]
  - endpoints: [a:e1, b:e1]
  - endpoints: [a:e2, b:e2]
  - endpoints: [r:e1, h1:e0]
  - endpoints: [r:e2, h2:e0]
  - endpoints: [sw:p1, s1:e0]
  - endpoints: [sw:p2, s2:e0]
  - endpoints: [sw:p3, s3:e0]
`

// TestPrivilegedVLANBondVRFFiltering deploys kindsLab where the kernel has
// every kind (the VM): pings cross the VLAN; the bond fails over to its
// other port when its active port goes down; the VRF keeps h1 from h2
// (its table has only its port's subnet) while h1 reaches the VRF's port;
// the filtering bridge joins s1 and s2 (VLAN 10) and not s3 (VLAN 20).
func TestPrivilegedVLANBondVRFFiltering(t *testing.T) {
	needKind(t, spec.KindVLAN, spec.KindBond, spec.KindVRF)
	if err := probeVLANFiltering(); err != nil {
		t.Skipf("bridge VLAN filtering: %v", err)
	}
	f := newFixture(t, kindsLab)
	f.deploy()
	f.ping("a", "10.10.0.2")
	f.ping("a", "10.0.0.2")
	testBondFailover(t, f)
	f.ping("h1", "10.1.0.1")
	if got, _ := f.pings("h1", "10.2.0.2"); got != 0 {
		t.Errorf("h1 reached h2 across the VRF %d times of 3; the VRF's table has no route to it", got)
	}
	if _, err := walk.Trace(f.lab, spec.Endpoint{Node: "h1"}, netip.MustParseAddr("10.2.0.2")); err == nil {
		t.Errorf("path finds h1 -> h2 across the VRF; want no route")
	}
	routes, err := f.handle("r").RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 10}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	if !hasRoute(routes, "10.1.0.0/24") || hasRoute(routes, "10.2.0.0/24") {
		t.Errorf("the VRF's table 10 has %v; want 10.1.0.0/24 and not 10.2.0.0/24", routes)
	}
	f.ping("s1", "10.5.0.2")
	if got, _ := f.pings("s1", "10.5.0.3"); got != 0 {
		t.Errorf("s1 (VLAN 10) reached s3 (VLAN 20) %d times of 3 through the filtering bridge", got)
	}
}

// testBondFailover takes the bond's active port down and pings again:
// the other port must have taken over.
func testBondFailover(t *testing.T, f *fixture) {
	t.Helper()
	f.ping("a", "10.20.0.2")
	h := f.handle("a")
	active := func() int {
		l, err := h.LinkByName("bd")
		if err != nil {
			t.Fatal(err)
		}
		return l.(*netlink.Bond).ActiveSlave
	}
	first := active()
	port, err := h.LinkByIndex(first)
	if err != nil {
		t.Fatalf("the bond's active port %d: %v", first, err)
	}
	if err := h.LinkSetDown(port); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for active() == first && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if now := active(); now == first || now == 0 {
		t.Fatalf("the bond's active port is still %d after %s went down", now, port.Attrs().Name)
	}
	f.ping("a", "10.20.0.2")
}

func hasRoute(routes []netlink.Route, dst string) bool {
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == dst {
			return true
		}
	}
	return false
}

// TestPrivilegedKindsRefusedByPreflight deploys, for each kind this
// kernel lacks, a lab that uses it: preflight refuses it, naming the
// kernel option, and nothing is created.
func TestPrivilegedKindsRefusedByPreflight(t *testing.T) {
	labs := map[string]string{
		"CONFIG_VLAN_8021Q": "v: {vlan: {parent: e0, id: 10}}",
		"CONFIG_BONDING":    "v: {bond: {ports: [e0]}}",
		"CONFIG_NET_VRF":    "v: {vrf: {table: 10, ports: [e0]}}",
	}
	kinds := map[string]spec.Kind{"CONFIG_VLAN_8021Q": spec.KindVLAN, "CONFIG_BONDING": spec.KindBond, "CONFIG_NET_VRF": spec.KindVRF}
	missing := 0
	for opt, entry := range labs {
		if probeKind(kinds[opt]) == nil {
			continue
		}
		missing++
		t.Run(opt, func(t *testing.T) {
			f := newFixture(t, "name: x\nnodes:\n  a:\n    interfaces:\n      e0: {}\n      "+entry+"\n  b: {}\nlinks:\n  - endpoints: [a:e0, b:e0]\n")
			_, err := f.m.Deploy(context.Background(), f.lab)
			var ce *ConflictError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), opt) || !strings.Contains(err.Error(), "nodes.a.interfaces.v") {
				t.Fatalf("deploy: %v; want a preflight refusal naming %s and nodes.a.interfaces.v", err, opt)
			}
			f.assertGone()
			if _, err := os.Stat(f.m.StateDir); err == nil {
				if entries, _ := os.ReadDir(f.m.StateDir); hasState(entries) {
					t.Errorf("state left in %s: %v", f.m.StateDir, entries)
				}
			}
		})
	}
	if missing == 0 {
		t.Skip("this kernel has VLANs, bonds and VRFs: nothing to refuse")
	}
}

func hasState(entries []os.DirEntry) bool {
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			return true
		}
	}
	return false
}

// needKind skips unless the kernel can make every kind.
func needKind(t *testing.T, kinds ...spec.Kind) {
	t.Helper()
	for _, k := range kinds {
		if err := probeKind(k); err != nil {
			t.Skipf("%s: %v (tested in the VM)", k, err)
		}
	}
}
