package lab

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

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
			tp, err := f.m.Trace(f.lab, spec.Endpoint{Node: n.Name}, o.Addr, spec.Flow{})
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
	if _, err := f.m.Trace(f.lab, spec.Endpoint{Node: "client"}, server, spec.Flow{}); err == nil {
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
	f := newFixture(t, "client-router-server.yaml")
	f.deploy()
	server := netip.MustParseAddr("10.0.2.1")
	trace := func() *KernelDisagrees {
		t.Helper()
		_, err := f.m.Trace(f.lab, spec.Endpoint{Node: "ns1"}, server, spec.Flow{})
		var kd *KernelDisagrees
		if !errors.As(err, &kd) {
			t.Fatalf("Trace: %v, want KernelDisagrees", err)
		}
		return kd
	}
	// The router stops forwarding.
	must(t, f.nsDo("ns2", func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("0"), 0) }))
	if kd := trace(); !strings.Contains(kd.Error(), "ns2: the kernel does not forward") {
		t.Errorf("forwarding off: %v", kd)
	}
	must(t, f.nsDo("ns2", func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0) }))
	if _, err := f.m.Trace(f.lab, spec.Endpoint{Node: "ns1"}, server, spec.Flow{}); err != nil {
		t.Fatalf("forwarding back on: %v", err)
	}
	// The client's default route is gone.
	h := f.handle("ns1")
	routes, err := h.RouteList(nil, netlink.FAMILY_V4)
	must(t, err)
	for _, r := range routes {
		if r.Dst == nil || r.Dst.String() == "0.0.0.0/0" {
			must(t, h.RouteDel(&r))
		}
	}
	if kd := trace(); !strings.Contains(kd.Error(), "ns1: the kernel has no route to 10.0.2.1") {
		t.Errorf("route deleted: %v", kd)
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
