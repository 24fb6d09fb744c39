package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/sriov"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestExpectedFromFile(t *testing.T) {
	data, err := os.ReadFile("../../examples/two-routers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, _, _ := strings.Cut(string(data), "traffic:")
	// Without r2's route back, the server answers no one beyond r2.
	src = strings.Replace(src, "      - {to: 10.1.0.0/24, via: 10.12.0.1}\n", "", 1)
	l, err := spec.Parse("chain.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := failing(Expected(l), func(p Pair) bool { return !p.Expect })
	want := []string{
		// the client's echoes reach r2 and the server; replies have no way back
		"client -> 10.12.0.2", "client -> 10.2.0.1", "client -> 10.2.0.2",
		// r2 and the server have no route to 10.1.0.0/24 at all
		"r2 -> 10.1.0.1", "r2 -> 10.1.0.2", "server -> 10.1.0.1", "server -> 10.1.0.2",
	}
	sort.Strings(want)
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("unreachable by the file:\n got  %v\n want %v", got, want)
	}
	for _, p := range Expected(l) {
		if !p.Expect && p.Why == "" {
			t.Errorf("%s -> %s: no reason given", p.From, p.To)
		}
	}
}

// TestExpectedFromInterface: expect: lines whose FROM names an interface
// make pairs of their own, sent from that interface's address, expected
// as the last such line covering them says; they leave the pairs from the
// kernel's chosen source alone. An interface without an address of the
// target's family gives a pair that says it could not be sent.
func TestExpectedFromInterface(t *testing.T) {
	l, err := spec.Parse("x.yaml", []byte(`name: t
nodes:
  a:
    interfaces:
      e0: {addresses: [10.0.1.1/24]}
  b:
    interfaces:
      e0: {addresses: [10.0.1.2/24, "fd00::2/64"]}
links:
  - endpoints: [a:e0, b:e0]
expect:
  unreachable: ["a:e0 -> b"]
  reachable: ["a:e0 -> 10.0.1.2"]
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range Expected(l) {
		got = append(got, fmt.Sprintf("%s -> %s expect=%v send_error=%q", p.Sender(), p.To, p.Expect, p.SendErr))
	}
	want := []string{
		`a -> 10.0.1.1 expect=true send_error=""`,
		`a -> 10.0.1.2 expect=true send_error=""`,
		`a -> fd00::2 expect=false send_error=""`,
		`b -> 10.0.1.1 expect=true send_error=""`,
		`b -> 10.0.1.2 expect=true send_error=""`,
		`b -> fd00::2 expect=true send_error=""`,
		`a:e0 (10.0.1.1) -> 10.0.1.2 expect=true send_error=""`,
		`a:e0 -> fd00::2 expect=false send_error="a:e0 has no IPv6 address to send from"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pairs:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func failing(pairs []Pair, bad func(Pair) bool) []string {
	var out []string
	for _, p := range pairs {
		if bad(p) {
			out = append(out, p.From+" -> "+p.To.String())
		}
	}
	sort.Strings(out)
	return out
}

func TestPrivilegedCheckExamples(t *testing.T) {
	for _, file := range []string{"client-router-server.yaml", "pair.yaml", "switch.yaml", "two-routers.yaml"} {
		t.Run(file, func(t *testing.T) {
			l := labdeploy.Example(t, file, "c")
			assertAllOK(t, l)
		})
	}
	t.Run("sriov-vfs.yaml", func(t *testing.T) {
		labtest.SkipUnlessRoot(t)
		data, err := os.ReadFile("../../examples/sriov-vfs.yaml")
		if err != nil {
			t.Fatal(err)
		}
		pf := labtest.NewFakePF(t, 2)
		pf.Switch(t, ns.DefaultDir) // the NIC's embedded switch joins the VFs
		name := labtest.Name("c")
		src := labtest.Rename([]byte(strings.ReplaceAll(string(data), "ens4f0np0", pf.PF)), name)
		l, err := spec.Parse("sriov.yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		m := &lab.Manager{StateDir: t.TempDir(), Sysfs: pf.Root, VFs: &memVFs{s: map[int]sriov.VFSettings{}}}
		if _, err := m.Deploy(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := m.Destroy(l.Name); err != nil {
				t.Error(err)
			}
		})
		assertAllOK(t, l)
	})
}

func assertAllOK(t *testing.T, l *spec.Lab) {
	t.Helper()
	pairs, err := Run(context.Background(), labdeploy.Open(t, l).Opened, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != len(l.Nodes)*len(l.Addresses()) {
		t.Fatalf("%d pairs for %d nodes and %d addresses", len(pairs), len(l.Nodes), len(l.Addresses()))
	}
	for _, p := range pairs {
		if !p.Expect || !p.Answered {
			t.Errorf("%s -> %s (%s): expected %v (%s), answered %v %s", p.From, p.To, p.Owner, p.Expect, p.Why, p.Answered, p.SendErr)
		}
	}
}

// memVFs stands in for the PF-side VF settings of the fake PF.
type memVFs struct {
	mu sync.Mutex
	s  map[int]sriov.VFSettings
}

func (m *memVFs) Get(pf string, vf int) (sriov.VFSettings, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s[vf], nil
}

func (m *memVFs) Set(pf string, vf int, s sriov.VFSettings) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s[vf] = s
	return nil
}

// crsDefault is ns3's default route in the client-router-server example.
const crsDefault = "      - {to: default, via: 10.0.2.254}\n"

// TestPrivilegedCheckRouteRemoved removes the server's default route under
// a deployed lab: the kernel lacks a route the file declares, so exactly
// the pairs that needed it are broken (not "silent as the routes say":
// the file's routes say they answer), each naming the lost route, and the
// difference is one the kernel lacks.
func TestPrivilegedCheckRouteRemoved(t *testing.T) {
	labtest.CoveredOnHost(t)
	l := labdeploy.Example(t, "client-router-server.yaml", "c")
	h := handle(t, l, "ns3")
	routes, err := h.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, r := range routes {
		if r.Dst == nil || r.Dst.String() == "0.0.0.0/0" {
			if err := h.RouteDel(&r); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("deleted %d default routes", deleted)
	}
	r := labdeploy.Open(t, l)
	pairs, err := Run(context.Background(), r.Opened, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := failing(pairs, Pair.Broken); strings.Join(got, ", ") != strings.Join(needDefault, ", ") {
		t.Errorf("broken:\n got  %v\n want %v", got, needDefault)
	}
	for _, p := range pairs {
		if p.Broken() && !strings.Contains(p.Why, "ns3: the file's route 0.0.0.0/0 via 10.0.2.254 is not in the kernel") {
			t.Errorf("%s -> %s is broken without naming the lost route: %q", p.From, p.To, p.Why)
		}
	}
	if s := silent(pairs); len(s) != 0 {
		t.Errorf("silent as the routes say with a route of the file lost: %v", s)
	}
	assertDifference(t, r, deployed.Difference{Node: "ns3", What: "the file's route 0.0.0.0/0 via 10.0.2.254 is not in the kernel", Missing: true})
}

// needDefault are the pairs of the client-router-server lab that need the
// server's default route: the client's echo to it (for the reply) and the
// server's echoes beyond the router's near side.
var needDefault = []string{"ns1 -> 10.0.2.1", "ns3 -> 10.0.1.1", "ns3 -> 10.0.1.254"}

// assertKernelAgrees runs check and requires no pair flagged either way.
func assertKernelAgrees(t *testing.T, r *lab.Running) Pairs {
	t.Helper()
	pairs, err := Run(context.Background(), r.Opened, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := failing(pairs, func(p Pair) bool { return !p.OK() }); len(f) > 0 {
		t.Errorf("flagged: %v", f)
	}
	return pairs
}

// silent lists the pairs expected not to answer.
func silent(pairs Pairs) []string {
	return failing(pairs, func(p Pair) bool { return !p.Expect && !p.Answered })
}

func assertDifference(t *testing.T, r *lab.Running, want deployed.Difference) {
	t.Helper()
	if len(r.Differences) != 1 || r.Differences[0] != want {
		t.Errorf("differences %v, want %v", r.Differences, want)
	}
}

// TestPrivilegedCheckRouteAdded is the opposite: the file lacks the
// server's default route, someone adds it by hand; the pairs it makes
// reachable answer as the kernels' routes say, and the route is a
// difference from the file.
func TestPrivilegedCheckRouteAdded(t *testing.T) {
	labtest.CoveredOnHost(t)
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile(filepath.Join("../../examples", "client-router-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "    routes:\n"+crsDefault, "", 1)
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("c")))
	if len(l.Node("ns3").Routes) != 0 {
		t.Fatal("the route is still in the file")
	}
	h := handle(t, l, "ns3")
	gw := &netlink.Route{Dst: nil, Gw: []byte{10, 0, 2, 254}, Protocol: unix.RTPROT_BOOT}
	if err := h.RouteAdd(gw); err != nil {
		t.Fatal(err)
	}
	r := labdeploy.Open(t, l)
	if got := silent(assertKernelAgrees(t, r)); len(got) != 0 {
		t.Errorf("expected silent: %v, want none", got)
	}
	assertDifference(t, r, deployed.Difference{Node: "ns3", What: "route 0.0.0.0/0 via 10.0.2.254 dev veth2-peer (protocol boot) is in the kernel, not in the file"})
}

// TestPrivilegedCheckNothingToCheck: a deployed lab without an address
// anywhere gives no pair, and that is a failure, not a pass.
func TestPrivilegedCheckNothingToCheck(t *testing.T) {
	labtest.CoveredOnHost(t)
	l := labdeploy.Deploy(t, labtest.Rename([]byte("name: x\nnodes:\n  a: {}\n  b: {}\nlinks:\n  - endpoints: [a:e0, b:e0]\n"), labtest.Name("c")))
	pairs, err := Run(context.Background(), labdeploy.Open(t, l).Opened, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if summary, bad := pairs.Summary(); len(pairs) != 0 || !bad || !strings.Contains(summary, "nothing was checked") {
		t.Errorf("%d pairs: %q (bad %v)", len(pairs), summary, bad)
	}
}

func handle(t *testing.T, l *spec.Lab, node string) *netlink.Handle {
	return labtest.Handle(t, ns.DefaultDir, l.Namespace(node))
}

// unannouncedLab: h1 - r1 - r2 - h2 over eBGP, where r1 announces h1's
// subnet and r2, as in Kathara's simple-peering lab, announces nothing.
const unannouncedLab = `name: unann
nodes:
  h1:
    interfaces:
      eth0: {addresses: [10.1.0.1/24]}
    routes:
      - {to: default, via: 10.1.0.254}
  h2:
    interfaces:
      eth0: {addresses: [10.2.0.1/24]}
    routes:
      - {to: default, via: 10.2.0.254}
  r1:
    forwarding: true
    interfaces:
      eth0: {addresses: [10.1.0.254/24]}
      eth1: {addresses: [10.0.0.1/30]}
    frr:
      daemons: [bgpd]
      config: |
        router bgp 1
        neighbor 10.0.0.2 remote-as 2
        network 10.1.0.0/24
        log file /var/log/frr/frr.log
  r2:
    forwarding: true
    interfaces:
      eth0: {addresses: [10.2.0.254/24]}
      eth1: {addresses: [10.0.0.2/30]}
    frr:
      daemons: [bgpd]
      config: |
        router bgp 2
        neighbor 10.0.0.1 remote-as 1
links:
  - endpoints: [h1:eth0, r1:eth0]
  - endpoints: [r1:eth1, r2:eth1]
  - endpoints: [r2:eth0, h2:eth0]
`

// TestExpectedUnannounced: a destination no routing configuration of the
// lab announces is expected to stay silent, and says why, naming the
// node that holds it; one a configuration announces is left to the
// routes the daemons learn.
func TestExpectedUnannounced(t *testing.T) {
	l, err := spec.Parse("unann.yaml", []byte(unannouncedLab))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Expected(l) {
		h2net := strings.HasPrefix(p.To.String(), "10.2.0.")
		switch {
		case h2net && p.From != "r2" && p.From != "h2":
			if p.Expect || !strings.Contains(p.Why, "no routing configuration of the lab announces it: r2 has it on eth0 (10.2.0.254/24), and no network statement") {
				t.Errorf("%s -> %s: expected %v (%s); want silence, for no configuration announces 10.2.0.0/24", p.From, p.To, p.Expect, p.Why)
			}
		case p.From == "h1" && p.To.String() == "10.0.0.2":
			if !p.Expect || !strings.Contains(p.Why, "by the routes the daemons learn") {
				t.Errorf("%s -> %s: expected %v (%s); want it left to what r2 learns of r1's network", p.From, p.To, p.Expect, p.Why)
			}
		}
	}
}

// TestColumnBlocks: a matrix wider than the width is split into blocks
// of columns whose lines fit, each with the rows' names, and a matrix
// that fits stays one block.
func TestColumnBlocks(t *testing.T) {
	rows := [][]string{{"FROM \\ TO"}, {""}, {"h1"}, {"r1"}}
	for c := range 13 {
		rows[0] = append(rows[0], fmt.Sprintf("10.0.%d.254", c))
		rows[1] = append(rows[1], fmt.Sprintf("router%d:eth0", c))
		rows[2] = append(rows[2], "0.05ms")
		rows[3] = append(rows[3], "UNEXPECTED 0.07ms")
	}
	blocks := columnBlocks(rows, 120)
	if len(blocks) < 2 {
		t.Fatalf("13 columns of 17 in one block: %v", blocks)
	}
	var all []int
	for _, b := range blocks {
		width := 9 // "FROM \ TO"
		for range b {
			width += 2 + 17
		}
		if width > 120 {
			t.Errorf("block %v is %d wide", b, width)
		}
		all = append(all, b...)
	}
	for k, c := range all {
		if c != k+1 {
			t.Fatalf("columns out of order or missing: %v", all)
		}
	}
	if got := columnBlocks(rows[:3], 1000); len(got) != 1 || len(got[0]) != 13 {
		t.Errorf("a matrix that fits was split: %v", got)
	}
}
