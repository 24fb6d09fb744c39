package export

import (
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"gopkg.in/yaml.v3"
)

// TestPrivilegedExportBuildsTheLab does what containerlab does with an
// export, without containers: a namespace per node, the links as veth
// pairs with their MACs and MTUs, up, then each node's exec lines run
// inside it in order. The lab must then forward: the client reaches the
// server through the router, and the NAT lab's inside host reaches the
// outside one through the masquerading gateway.
func TestPrivilegedExportBuildsTheLab(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	for _, tc := range []struct {
		file, from string
		to         netip.Addr
	}{
		{"client-router-server.yaml", "ns1", netip.MustParseAddr("10.0.2.1")},
		{"nat-router.yaml", "lan", netip.MustParseAddr("172.30.0.2")},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, out, _ := exported(t, "../../examples/"+tc.file)
			var c Containerlab
			if err := yaml.Unmarshal(out, &c); err != nil {
				t.Fatal(err)
			}
			names := map[string]string{}
			for node := range c.Topology.Nodes {
				names[node] = labtest.Namespace(t, ns.DefaultDir)
			}
			for _, k := range c.Topology.Links {
				addLink(t, names, k)
			}
			for node, n := range c.Topology.Nodes {
				for _, line := range n.Exec {
					if out, err := exec.Command("ip", "netns", "exec", names[node], "sh", "-c", line).CombinedOutput(); err != nil {
						t.Fatalf("%s: %s: %v\n%s", node, line, err, out)
					}
				}
			}
			got, err := labtest.Ping(ns.DefaultDir, names[tc.from], tc.to, 3, 2*time.Second)
			if err != nil || got != 3 {
				t.Errorf("%s -> %s: %d of 3 echoes answered, %v", tc.from, tc.to, got, err)
			}
		})
	}
}

// addLink makes link k as containerlab does: a veth pair across the two
// nodes' namespaces, with the endpoints' MACs and the link's MTU, both
// ends up.
func addLink(t *testing.T, names map[string]string, k ClabLink) {
	t.Helper()
	a, b := k.Endpoints[0], k.Endpoints[1]
	peer, err := ns.Open(ns.DefaultDir, names[b.Node])
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	h := labtest.Handle(t, ns.DefaultDir, names[a.Node])
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a.Interface, MTU: k.MTU, HardwareAddr: mac(t, a.MAC)},
		PeerName: b.Interface, PeerHardwareAddr: mac(t, b.MAC), PeerNamespace: netlink.NsFd(peer.Fd())}
	if err := h.LinkAdd(veth); err != nil {
		t.Fatalf("veth %s:%s - %s:%s: %v", a.Node, a.Interface, b.Node, b.Interface, err)
	}
	for _, end := range []ClabEndpoint{a, b} {
		h := labtest.Handle(t, ns.DefaultDir, names[end.Node])
		l, err := h.LinkByName(end.Interface)
		if err == nil {
			err = h.LinkSetUp(l)
		}
		if err != nil {
			t.Fatalf("%s:%s up: %v", end.Node, end.Interface, err)
		}
	}
}

func mac(t *testing.T, s string) []byte {
	t.Helper()
	if s == "" {
		return nil
	}
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
