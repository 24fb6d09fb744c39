package spec

import (
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
)

func twoHosts(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../examples/two-hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`, ssh: [^}]*`).ReplaceAllString(string(data), "") // as the tests' edits expect
}

// TestHostsDerive: links between hosts get a VNI (the file's, or one
// derived from the lab and the link, the same on every host), port 4789
// and the MTU that fits VXLAN's 50 bytes in the 1500-byte underlay; a link
// on one host stays a veth pair.
func TestHostsDerive(t *testing.T) {
	l, err := Parse("two-hosts.yaml", []byte(twoHosts(t)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := l.Links[0], l.Links[1]
	if b.VNI != 4242 || a.VNI == 0 || a.VNI == 4242 || a.Port != DefaultVXLANPort || b.Port != DefaultVXLANPort {
		t.Errorf("VNIs %d %d, ports %d %d", a.VNI, b.VNI, a.Port, b.Port)
	}
	again, _ := Parse("copy.yaml", []byte(twoHosts(t)))
	if again.Links[0].VNI != a.VNI {
		t.Errorf("derived VNI %d, then %d: must be the same on every host", a.VNI, again.Links[0].VNI)
	}
	for _, e := range []Endpoint{a.A, a.B, b.A, b.B} {
		if mtu := l.Node(e.Node).Interface(e.Interface).MTU; mtu != 1450 {
			t.Errorf("%s mtu %d, want 1450", e, mtu)
		}
	}
	oneHost := strings.Replace(strings.Replace(twoHosts(t), "  server:\n    host: a", "  server:\n    host: b", 1), "    vni: 4242\n", "", 1)
	local, err := Parse("x.yaml", []byte(oneHost))
	if err != nil {
		t.Fatal(err)
	}
	if k := local.Links[1]; k.VNI != 0 || local.CrossesHosts(k) {
		t.Errorf("router-server on one host: %+v", k)
	}
}

// TestPart: each host's part has its nodes, its links, a tunnel per link
// to another host, and the runs it sends; both parts agree on every
// tunnel.
func TestPart(t *testing.T) {
	l, err := Parse("two-hosts.yaml", []byte(twoHosts(t)))
	if err != nil {
		t.Fatal(err)
	}
	pa, err := l.PartOf("a")
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := l.PartOf("b")
	if len(pa.Nodes) != 2 || len(pb.Nodes) != 1 || len(pa.Links)+len(pb.Links) != 0 || len(pa.Tunnels()) != 2 || len(pb.Tunnels()) != 2 {
		t.Fatalf("parts: a %d nodes %d tunnels, b %d nodes %d tunnels", len(pa.Nodes), len(pa.Tunnels()), len(pb.Nodes), len(pb.Tunnels()))
	}
	for i, ta := range pa.Tunnels() {
		tb := pb.Tunnels()[i]
		if ta.VNI != tb.VNI || ta.Local != tb.Remote || ta.LocalIP != tb.RemoteIP || ta.RemoteHost != "b" || tb.RemoteHost != "a" {
			t.Errorf("tunnel %d: a %v, b %v", i, ta, tb)
		}
	}
	if len(pa.Traffic) != 1 || len(pb.Traffic) != 0 || !pa.Local("client") || pa.Local("router") || pa.Model() != l {
		t.Errorf("part a: traffic %d, b %d", len(pa.Traffic), len(pb.Traffic))
	}
	if _, err := l.PartOf("c"); err == nil || !strings.Contains(err.Error(), "its hosts are a, b") {
		t.Errorf("unknown host: %v", err)
	}
}

// TestHostRules: what is wrong with hosts and links between them is named
// with its place and its fix.
func TestHostRules(t *testing.T) {
	src := twoHosts(t)
	for _, c := range hostCases {
		problemAfterEdit(t, src, c.from, c.to, c.where, c.msg)
	}
	noHosts := strings.Replace(src, "hosts:\n  a: {underlay: 192.168.77.1}\n  b: {underlay: 192.168.77.2}\n", "", 1)
	problemAfterEdit(t, noHosts, "name: hosts2", "name: hosts3", "x.yaml:21:11: nodes.router.host", `host "b", but the lab has no hosts: section`)
	problemAfterEdit(t, noHosts, "name: hosts2", "name: hosts3", "x.yaml:34:5: links[1]", "vni: and port: are for links between hosts (VXLAN), and this lab has no hosts")
}

var hostCases = []struct{ from, to, where, msg string }{
	{"  server:\n    host: a", "  server:\n    host: c", "x.yaml:30:11: nodes.server.host", `host "c" is not under hosts: (did you mean "a"?)`},
	{"  server:\n    host: a\n", "  server:\n", "x.yaml:29:3: nodes.server", "missing host: the lab spans hosts a, b"},
	{"      eth0: {addresses: [10.1.2.1/24]}", "      eth0: {addresses: [10.1.2.1/24], mtu: 1500}", "x.yaml:37:5: links[1]", "set mtu: 1450 or less"},
	{"  b: {underlay: 192.168.77.2}", "  b: {underlay: 192.168.77.1}", "x.yaml:15:17: hosts.b.underlay", "is host a's already"},
	{"  b: {underlay: 192.168.77.2}", "  b: {underlay: \"fd00::2\"}", "x.yaml:15:17: hosts.b.underlay", "not of the same family"},
	{"  b: {underlay: 192.168.77.2}", "  b: {underlay: 192.168.77.2/24}", "x.yaml:15:17: hosts.b.underlay", "no prefix length"},
	{"  b: {underlay: 192.168.77.2}", "  b: {mtu: 9000}", "x.yaml:15:3: hosts.b", "missing underlay"},
	{"  b: {underlay: 192.168.77.2}", "  b: {node_selector: {}}", "x.yaml:15:22: hosts.b.node_selector", "node_selector: is empty"},
	{"    vni: 4242", "    vni: 16777216", "x.yaml:38:10: links[1].vni", "a VXLAN network identifier"},
	{"  - endpoints: [client:eth0, router:eth0]", "  - endpoints: [client:eth0, router:eth0]\n    vni: 4242", "x.yaml:39:10: links[1].vni", "VNI 4242 is links[0]'s already"},
}

// TestHostPlacedByLabels: a host with node_selector: and no underlay:
// parses, has no part until placed (the error says how), and the file
// with its underlay written in (WithUnderlays) parses to the address
// given, its comments and the selector kept.
func TestHostPlacedByLabels(t *testing.T) {
	src := strings.Replace(twoHosts(t), "  b: {underlay: 192.168.77.2}", "  b: {node_selector: {nslab.dev/role: router}} # the router's machine", 1)
	l, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Host("b"); h.Underlay.IsValid() || h.NodeSelector["nslab.dev/role"] != "router" {
		t.Fatalf("host b: %+v", h)
	}
	if _, err := l.PartOf("a"); err == nil || !strings.Contains(err.Error(), "host b has no underlay: address") {
		t.Errorf("a part of an unplaced lab: %v", err)
	}
	placed, err := WithUnderlays([]byte(src), map[string]netip.Addr{"b": netip.MustParseAddr("192.168.77.9")})
	if err != nil {
		t.Fatal(err)
	}
	l, err = Parse("x.yaml", placed)
	if err != nil {
		t.Fatalf("%v\n%s", err, placed)
	}
	if l.Host("b").Underlay != netip.MustParseAddr("192.168.77.9") || l.Host("b").NodeSelector == nil || !strings.Contains(string(placed), "# the router's machine") {
		t.Errorf("placed:\n%s", placed)
	}
	if _, err := l.PartOf("a"); err != nil {
		t.Errorf("a part of the placed lab: %v", err)
	}
}
