package export

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// schema compiles containerlab's published schema (testdata/README.md
// says where it comes from).
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile("testdata/clab.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// instance reads YAML text as the JSON value the schema is checked on.
func instance(t *testing.T, text []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(j)))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func exported(t *testing.T, file string) (*spec.Lab, []byte, []string) {
	t.Helper()
	l, err := spec.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, left := ToContainerlab(l, DefaultImage)
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return l, out, left
}

// TestExportValidatesAgainstSchema exports every example and validates it
// against containerlab's schema.
func TestExportValidatesAgainstSchema(t *testing.T) {
	s := schema(t)
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) < 5 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, out, _ := exported(t, f)
			if err := s.Validate(instance(t, out)); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}

// TestSchemaRefuses: the schema check can fail: a link with one end and a
// node without kind's type are refused.
func TestSchemaRefuses(t *testing.T) {
	s := schema(t)
	_, out, _ := exported(t, "../../examples/client-router-server.yaml")
	for _, bad := range []struct{ from, to string }{
		{"          endpoints:\n            - node: ns1\n", "          endpoints:\n            - node: 1\n"},
		{"name: crs\n", "nome: crs\n"},
		{"mac: ", "mac: zz"},
	} {
		text := strings.Replace(string(out), bad.from, bad.to, 1)
		if text == string(out) {
			t.Fatalf("%q not in the export:\n%s", bad.from, out)
		}
		if err := s.Validate(instance(t, []byte(text))); err == nil {
			t.Errorf("%q -> %q: the schema accepted it", bad.from, bad.to)
		}
	}
}

// TestExportContent checks what the client-router-server export says:
// every node and link, the MACs, and the router's settings as exec lines
// in nslab's order; what cannot be carried is named.
func TestExportContent(t *testing.T) {
	l, out, left := exported(t, "../../examples/client-router-server.yaml")
	var c Containerlab
	if err := yaml.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	if c.Name != l.Name || len(c.Topology.Nodes) != len(l.Nodes) || len(c.Topology.Links) != len(l.Links) {
		t.Fatalf("%d nodes, %d links:\n%s", len(c.Topology.Nodes), len(c.Topology.Links), out)
	}
	if i := strings.Index(string(out), "ns1:"); i < 0 || i > strings.Index(string(out), "ns2:") {
		t.Errorf("nodes not in the lab's order:\n%s", out)
	}
	router := c.Topology.Nodes["ns2"]
	want := []string{"sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 net.ipv4.conf.all.rp_filter=0",
		"ip addr add 10.0.1.254/24 brd + dev veth1-peer", "ip addr add 10.0.2.254/24 brd + dev veth2"}
	at := -1
	for _, w := range want {
		i := slices.Index(router.Exec, w)
		if i <= at {
			t.Errorf("router exec %q: %q missing or out of order", router.Exec, w)
		}
		at = i
	}
	if router.Kind != "linux" || router.NetworkMode != "none" || router.Image != DefaultImage {
		t.Errorf("router %+v", router)
	}
	client := c.Topology.Nodes["ns1"]
	if !slices.Contains(client.Exec, "ip route add default via 10.0.1.254") {
		t.Errorf("client exec %q", client.Exec)
	}
	a := l.Node("ns1").Interface("veth1")
	if e := c.Topology.Links[0].Endpoints[0]; e.Node != "ns1" || e.Interface != "veth1" || e.MAC != a.MAC.String() {
		t.Errorf("first link %+v", c.Topology.Links[0])
	}
	for _, line := range append(router.Exec, client.Exec...) {
		if strings.Contains(line, "netns") || strings.Contains(line, "alias") || strings.Contains(line, "wait_up") {
			t.Errorf("a host-side line was exported: %q", line)
		}
	}
	if len(left) != 1 || !strings.Contains(left[0], "traffic runs") {
		t.Errorf("left out: %q", left)
	}
}

// TestExportLeftOut names placement and VFs.
func TestExportLeftOut(t *testing.T) {
	_, _, left := exported(t, "../../examples/sriov-vfs.yaml")
	_, _, placed := exported(t, "../../examples/forwarding-benchmark.yaml")
	all := strings.Join(append(left, placed...), "\n")
	if !strings.Contains(all, "SR-IOV VFs") || !strings.Contains(all, "CPU placement of") {
		t.Errorf("left out:\n%s", all)
	}
}

// TestExportKeepsFRRAndFiles: with a directory, every file of a node (its
// files:, FRR's daemons, frr.conf and vtysh.conf) is written beside the
// topology and bound into the container, and FRR nodes get FRR's image;
// without one, each such node is named as not exported whole.
func TestExportKeepsFRRAndFiles(t *testing.T) {
	l, err := spec.ReadFile("../../examples/ospf-ring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, files, _ := WithFiles(l, Options{Image: DefaultImage, FRRImage: DefaultFRRImage, Dir: t.TempDir()})
	r1 := c.Topology.Nodes["r1"]
	if r1.Image != DefaultFRRImage || !slices.Contains(r1.Binds, "r1/etc/frr/frr.conf:/etc/frr/frr.conf") || !slices.Contains(r1.Binds, "r1/etc/frr/daemons:/etc/frr/daemons") {
		t.Errorf("r1: %+v", r1)
	}
	if h1 := c.Topology.Nodes["h1"]; h1.Image != DefaultImage || len(h1.Binds) != 0 {
		t.Errorf("h1: %+v", h1)
	}
	var conf, daemons string
	for _, f := range files {
		switch f.Path {
		case "r1/etc/frr/frr.conf":
			conf = string(f.Data)
		case "r1/etc/frr/daemons":
			daemons = string(f.Data)
		}
	}
	if conf != l.Node("r1").FileAt(spec.FRRConfPath).Text || !strings.Contains(conf, "router ospf") || !strings.Contains(daemons, "ospfd=yes") {
		t.Errorf("r1's frr.conf %q, daemons %q", conf, daemons)
	}
	_, _, left := WithFiles(l, Options{Image: DefaultImage, FRRImage: DefaultFRRImage})
	if !slices.ContainsFunc(left, func(s string) bool {
		return strings.HasPrefix(s, "node r1's files (/etc/frr/daemons, /etc/frr/frr.conf, /etc/frr/vtysh.conf): written beside the topology and bound only with a directory")
	}) {
		t.Errorf("without a directory: %v", left)
	}
}
