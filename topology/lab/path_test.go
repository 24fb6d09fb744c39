package lab

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// checkEveryPath traces every node to every address of a deployed lab and
// requires the kernel to agree at every hop, with the MACs read from it.
func checkEveryPath(t *testing.T, f *fixture) int {
	t.Helper()
	traced := 0
	for _, n := range f.lab.Nodes {
		for _, o := range f.lab.Addresses() {
			if _, err := walk.Trace(f.lab, spec.Endpoint{Node: n.Name}, o.Addr); err != nil {
				t.Errorf("%s -> %s: the file gives no path: %v", n.Name, o.Addr, err)
				continue
			}
			tp, err := f.m.Store().Trace(f.lab, spec.Endpoint{Node: n.Name}, o.Addr, spec.Flow{})
			if err != nil {
				t.Errorf("%s -> %s: %v", n.Name, o.Addr, err)
				continue
			}
			if !tp.Deployed {
				t.Fatalf("%s -> %s: the lab is deployed, but Trace did not ask the kernel", n.Name, o.Addr)
			}
			for i, h := range tp.Hops {
				if h.Next.Node == "" {
					continue
				}
				link, err := f.handle(h.Next.Node).LinkByName(h.Next.Interface)
				if err != nil || tp.Hops[i].NextMAC.String() != link.Attrs().HardwareAddr.String() {
					t.Errorf("%s -> %s hop %d: MAC %s, kernel has %v (%v)", n.Name, o.Addr, i, tp.Hops[i].NextMAC, link, err)
				}
			}
			traced++
		}
	}
	return traced
}

func TestPrivilegedPathAgreesWithKernel(t *testing.T) {
	labtest.CoveredOnHost(t)
	for _, file := range []string{"client-router-server.yaml", "pair.yaml", "switch.yaml", "two-routers.yaml"} {
		t.Run(file, func(t *testing.T) {
			f := newFixture(t, file)
			f.deploy()
			if n := checkEveryPath(t, f); n < 4 {
				t.Errorf("traced %d paths", n)
			}
		})
	}
	t.Run("sriov-vfs.yaml", func(t *testing.T) {
		f, _, _ := sriovFixture(t)
		f.deploy()
		checkEveryPath(t, f)
	})
}

// TestPrivilegedPathUnreachable: without r1's route to the server's
// subnet, the file gives no path, says where it stops, and the kernel's
// own forwarding lookup in r1 fails the same way.
func TestPrivilegedPathUnreachable(t *testing.T) {
	data, err := os.ReadFile("../../examples/two-routers.yaml")
	must(t, err)
	y, _, _ := strings.Cut(string(data), "traffic:") // its path is validated
	y = strings.Replace(y, "      - {to: 10.2.0.0/24, via: 10.12.0.2}\n", "", 1)
	f := newFixture(t, y)
	server := netip.MustParseAddr("10.2.0.2")
	_, err = walk.Trace(f.lab, spec.Endpoint{Node: "client"}, server)
	if err == nil || !strings.Contains(err.Error(), "node r1 has no route to 10.2.0.2") {
		t.Fatalf("file path: %v, want it to stop at r1", err)
	}
	f.deploy()
	if _, err := f.m.Store().Trace(f.lab, spec.Endpoint{Node: "client"}, server, spec.Flow{}); err == nil {
		t.Fatal("Trace on the deployed lab found a path")
	}
	_, err = f.handle("r1").RouteGetWithOptions(net.IP(server.AsSlice()), &netlink.RouteGetOptions{Iif: "eth0", SrcAddr: net.ParseIP("10.1.0.2")})
	if err == nil {
		t.Error("the kernel forwards from r1 to 10.2.0.2; the file says it cannot")
	}
}

// TestPrivilegedPathKernelDisagrees changes the deployed lab underneath
// and expects Trace to name the hop.
func TestPrivilegedPathKernelDisagrees(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, "client-router-server.yaml")
	f.deploy()
	server := netip.MustParseAddr("10.0.2.1")
	trace := func() *deployed.KernelDisagrees {
		t.Helper()
		_, err := f.m.Store().Trace(f.lab, spec.Endpoint{Node: "ns1"}, server, spec.Flow{})
		var kd *deployed.KernelDisagrees
		if !errors.As(err, &kd) {
			t.Fatalf("Trace: %v, want deployed.KernelDisagrees", err)
		}
		return kd
	}
	// The router stops forwarding.
	must(t, f.nsDo("ns2", func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("0"), 0) }))
	if kd := trace(); !strings.Contains(kd.Error(), "ns2: the kernel does not forward") {
		t.Errorf("forwarding off: %v", kd)
	}
	must(t, f.nsDo("ns2", func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0) }))
	if _, err := f.m.Store().Trace(f.lab, spec.Endpoint{Node: "ns1"}, server, spec.Flow{}); err != nil {
		t.Fatalf("forwarding back on: %v", err)
	}
	// The client's default route is gone: the kernels' answer is that
	// there is no path, and why (the file's route is not in ns1's kernel).
	h := f.handle("ns1")
	routes, err := h.RouteList(nil, netlink.FAMILY_V4)
	must(t, err)
	for _, r := range routes {
		if r.Dst == nil || r.Dst.String() == "0.0.0.0/0" {
			must(t, h.RouteDel(&r))
		}
	}
	_, err = f.m.Store().Trace(f.lab, spec.Endpoint{Node: "ns1"}, server, spec.Flow{})
	var nk *deployed.NoKernelPath
	if !errors.As(err, &nk) || !strings.Contains(err.Error(), "node ns1 has no route to 10.0.2.1 in its kernel") ||
		!strings.Contains(err.Error(), "ns1: the file's route 0.0.0.0/0 via 10.0.1.254 is not in the kernel") {
		t.Errorf("route deleted: %v", err)
	}
}

// TestPrivilegedPathFollowsHandRoute: the file lacks r1's route to the
// server's subnet (the teaching lab's exercise: add it by hand). The file
// keeps the run (exec lines, daemons and users add routes), a deployed
// lab's path is its kernels', and the route added by hand is followed and
// named as a difference from the file.
func TestPrivilegedPathFollowsHandRoute(t *testing.T) {
	labtest.CoveredOnHost(t)
	data, err := os.ReadFile("../../examples/two-routers.yaml")
	must(t, err)
	y := strings.Replace(string(data), "      - {to: 10.2.0.0/24, via: 10.12.0.2}\n", "", 1)
	f := newFixture(t, y)
	if len(f.lab.Unrouted) != 1 || !strings.Contains(f.lab.Unrouted[0].Error(), "node r1 has no route to 10.2.0.2") {
		t.Fatalf("the file's unrouted runs: %v", f.lab.Unrouted)
	}
	f.deploy()
	server := netip.MustParseAddr("10.2.0.2")
	if _, err := f.m.Store().Trace(f.lab, spec.Endpoint{Node: "client"}, server, spec.Flow{}); err == nil || !strings.Contains(err.Error(), "node r1 has no route to 10.2.0.2 in its kernel") {
		t.Fatalf("before the route: %v", err)
	}
	eth1, err := f.handle("r1").LinkByName("eth1")
	must(t, err)
	must(t, f.handle("r1").RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: net.IP{10, 2, 0, 0}, Mask: net.CIDRMask(24, 32)},
		Gw: net.IP{10, 12, 0, 2}, LinkIndex: eth1.Attrs().Index, Protocol: 3 /* boot, as ip route add */}))
	tp, err := f.m.Store().Trace(f.lab, spec.Endpoint{Node: "client"}, server, spec.Flow{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, h := range tp.Hops {
		nodes = append(nodes, h.Node)
	}
	if strings.Join(nodes, " ") != "client r1 r2 server" || !tp.Deployed {
		t.Errorf("path %v (deployed %v)", nodes, tp.Deployed)
	}
	want := deployed.Difference{Node: "r1", What: "route 10.2.0.0/24 via 10.12.0.2 dev eth1 (protocol boot) is in the kernel, not in the file"}
	if len(tp.Differences) != 1 || tp.Differences[0] != want {
		t.Errorf("differences %v, want %v", tp.Differences, want)
	}
}

// TestPrivilegedPathLinkDown: with r1's link to r2 set down, the path is
// the kernels' (r1's route through it is gone with it), one answer, and
// the difference from the file is said.
func TestPrivilegedPathLinkDown(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, "two-routers.yaml")
	f.deploy()
	r, err := f.m.Open(f.lab)
	must(t, err)
	defer r.Close()
	must(t, r.SetLink(spec.Endpoint{Node: "r1", Interface: "eth1"}, false))
	_, err = f.m.Store().Trace(f.lab, spec.Endpoint{Node: "client"}, netip.MustParseAddr("10.2.0.2"), spec.Flow{})
	var nk *deployed.NoKernelPath
	if !errors.As(err, &nk) {
		t.Fatalf("got %v, want deployed.NoKernelPath", err)
	}
	for _, want := range []string{"node r1 has no route to 10.2.0.2 in its kernel", "r1: eth1 is down in the kernel", "r1: the file's route 10.2.0.0/24 via 10.12.0.2 is not in the kernel"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q", err, want)
		}
	}
	// r2's side has no carrier: the kernel still routes out of it, and
	// the path ends there. The kernel tells r2's end of its peer's state
	// through linkwatch, which may take up to a second.
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		_, err = f.m.Store().Trace(f.lab, spec.Endpoint{Node: "server"}, netip.MustParseAddr("10.12.0.1"), spec.Flow{})
		if err != nil || time.Since(start) > 3*time.Second {
			break
		}
	}
	if !errors.As(err, &nk) || !strings.Contains(err.Error(), "the path leaves r2 by eth0, which has no carrier") ||
		!strings.Contains(err.Error(), "r2: eth0 has no carrier") {
		t.Errorf("server -> r1 across the down link: %v", err)
	}
}

// nsDo runs fn on a thread inside a node's namespace.
func (f *fixture) nsDo(node string, fn func() error) error {
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		return err
	}
	defer n.Close()
	return n.Do(fn)
}
