package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/probe"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/walk"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// fixture is one privileged test's lab: a random lab name and namespace
// prefix, a private state directory, and the real /run/netns (so that
// `ip netns` shows the namespaces as users see them).
type fixture struct {
	t      *testing.T
	m      *Manager
	lab    *spec.Lab
	source []byte
	// napiBefore is the machine's napi kthreads before the lab was
	// built (see napiAffinity).
	napiBefore map[int]string
}

// newFixture loads a topology (a path under examples/ or YAML text), renames
// the lab and prefixes its namespaces randomly, and removes whatever the test
// leaves behind.
func newFixture(t *testing.T, topo string) *fixture {
	t.Helper()
	labtest.SkipUnlessRoot(t)
	name := labtest.Name("t")
	var data []byte
	if strings.HasSuffix(topo, ".yaml") {
		var err error
		if data, err = os.ReadFile(filepath.Join("../../examples", topo)); err != nil {
			t.Fatal(err)
		}
	} else {
		data = []byte(topo)
	}
	data = labtest.Rename(data, name)
	l, err := spec.Parse(name+".yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	walk.CheckPaths(l) // as cmd does after parsing
	f := &fixture{t: t, m: &Manager{StateDir: t.TempDir()}, lab: l, source: data}
	t.Cleanup(func() {
		f.m.BeforeStep = nil
		if _, err := f.m.Destroy(name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, n := range l.Nodes {
			ns.Remove(f.m.netnsDir(), l.Namespace(n.Name)) // foreign ones a test made
		}
	})
	return f
}

// failEachStep fails each step of the plan in turn through the seam and
// checks the deploy names the step, rolls back cleanly, and that check
// holds afterwards.
func (f *fixture) failEachStep(check func()) {
	f.t.Helper()
	steps := Plan(f.lab)
	seam := errors.New("injected failure")
	for k := range steps {
		f.m.BeforeStep = func(_ context.Context, i int, _ Step) error {
			if i == k {
				return seam
			}
			return nil
		}
		_, err := f.m.Deploy(context.Background(), f.lab)
		var se *StepError
		if !errors.As(err, &se) || se.Index != k || !errors.Is(err, seam) || se.RollbackErr != nil {
			f.t.Fatalf("fail at step %d (%s): got %v", k, steps[k].Name, err)
		}
		if !strings.Contains(err.Error(), steps[k].Name) {
			f.t.Errorf("error does not name the step: %v", err)
		}
		check()
	}
	f.m.BeforeStep = nil
}

func (f *fixture) deploy() {
	f.t.Helper()
	if _, err := f.m.Deploy(context.Background(), f.lab); err != nil {
		f.t.Fatalf("deploy: %v", err)
	}
}

func (f *fixture) ns(node string) string { return f.lab.Namespace(node) }

// left lists the lab's namespaces that exist now.
func (f *fixture) left() []string {
	var out []string
	for _, n := range f.lab.Nodes {
		if ok, _ := ns.Exists(f.m.netnsDir(), f.ns(n.Name)); ok {
			out = append(out, f.ns(n.Name))
		}
	}
	return out
}

func (f *fixture) assertGone() {
	f.t.Helper()
	if left := f.left(); len(left) > 0 {
		f.t.Errorf("namespaces left behind: %v", left)
	}
	if _, err := os.Stat(f.m.statePath(f.lab.Name)); !errors.Is(err, os.ErrNotExist) {
		f.t.Errorf("state file left behind: %v", err)
	}
}

func (f *fixture) ping(node, dst string) {
	f.t.Helper()
	got, err := labtest.Ping(f.m.netnsDir(), f.ns(node), netip.MustParseAddr(dst), 3, 2*time.Second)
	if err != nil {
		f.t.Fatalf("ping %s from %s: %v", dst, node, err)
	}
	if got != 3 {
		f.t.Fatalf("ping %s from %s: %d of 3 replies", dst, node, got)
	}
}

// hostLinks is the host namespace's links by name and index, to show that
// nothing a test does changes them.
func hostLinks(t *testing.T) []string {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		a := l.Attrs()
		out = append(out, a.Name+"/"+a.HardwareAddr.String()+"/"+a.Flags.String()+"/"+a.Alias)
	}
	sort.Strings(out)
	return out
}

func TestPrivilegedExamples(t *testing.T) {
	cases := []struct {
		file  string
		pings [][2]string // node, destination
	}{
		{"client-router-server.yaml", [][2]string{{"ns1", "10.0.2.1"}, {"ns3", "10.0.1.1"}}},
		{"pair.yaml", [][2]string{{"ns1", "192.168.1.12"}}},
		{"switch.yaml", [][2]string{{"h1", "192.168.9.12"}, {"h2", "192.168.9.1"}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			before := hostLinks(t)
			f := newFixture(t, c.file)
			f.deploy()
			for _, p := range c.pings {
				f.ping(p[0], p[1])
			}
			if _, err := f.m.Destroy(f.lab.Name); err != nil {
				t.Fatal(err)
			}
			f.assertGone()
			if after := hostLinks(t); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Errorf("host links changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// TestPrivilegedRollbackEveryStep fails each step of the plan in turn and
// checks that nothing is left. The topology has every kind of step.
func TestPrivilegedRollbackEveryStep(t *testing.T) {
	labtest.CoveredOnHost(t)
	topo := `name: x
nodes:
  a:
    cpus: [0]
    interfaces:
      e0: {addresses: [10.0.1.1/24, "fd00:1::1/64"], mac: "02:00:00:00:00:01", mtu: 9000, queues: 2}
      lo: {addresses: [10.9.9.9/32]}
    routes: [{to: default, via: 10.0.1.254}, {to: "::/0", via: "fd00:1::fe"}]
  r:
    forwarding: true
    sysctls: {net.ipv4.conf.all.rp_filter: 0}
    interfaces:
      e0: {addresses: [10.0.1.254/24, "fd00:1::fe/64"]}
      e1: {}
      e2: {}
    bridges:
      br0: {ports: [e1, e2], addresses: [10.0.2.254/24], mtu: 1400}
    nat: [{masquerade: {out: br0, from: 10.0.1.0/24}}]
    firewall: [{drop: {in: e0, to: 10.0.3.0/24}}]
  b:
    interfaces:
      e0: {addresses: [10.0.2.1/24]}
    routes: [{to: 10.0.1.0/24, via: 10.0.2.254, metric: 10}]
  c:
    cpus: "0"
    receive: napi
    interfaces:
      e0: {addresses: [10.0.2.2/24]}
    routes: [{to: default, via: 10.0.2.254}]
links:
  - endpoints: [a:e0, r:e0]
  - endpoints: [r:e1, b:e0]
  - endpoints: [r:e2, c:e0]
`
	f := newFixture(t, topo)
	before := hostLinks(t)
	steps := Plan(f.lab)
	if len(steps) < 20 || !strings.Contains(fmt.Sprint(steps), "nftables table") {
		t.Fatalf("plan has %d steps, want every kind", len(steps))
	}
	f.failEachStep(f.assertGone)
	// And the whole plan works, end to end.
	f.deploy()
	f.ping("a", "10.0.2.1")
	f.ping("c", "10.0.1.1")
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	f.assertGone()
	if after := hostLinks(t); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("host links changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestPrivilegedKernelRefusalRollsBack uses a failure the kernel itself
// produces (a sysctl this kernel does not have) rather than the seam.
func TestPrivilegedKernelRefusalRollsBack(t *testing.T) {
	for _, c := range []struct{ key, step string }{
		{"net.ipv4.no_such_key", "create namespace"},              // written at creation
		{"net.ipv4.conf.veth2.no_such_key", "configure node ns2"}, // needs the interface
	} {
		f := newFixture(t, strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    sysctls: {"+c.key+": 1}\n", 1))
		_, err := f.m.Deploy(context.Background(), f.lab)
		var se *StepError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "no such sysctl") || !strings.HasPrefix(se.Step, c.step) {
			t.Fatalf("%s: want a failed %q step, got %v", c.key, c.step, err)
		}
		f.assertGone()
	}
}

const pairYAML = `name: p
nodes:
  ns1:
    interfaces:
      veth1: {addresses: [192.168.1.11/24]}
  ns2:
    interfaces:
      veth2: {addresses: [192.168.1.12/24]}
links:
  - endpoints: [ns1:veth1, ns2:veth2]
`

func TestPrivilegedCancelRollsBack(t *testing.T) {
	f := newFixture(t, "client-router-server.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	f.m.BeforeStep = func(_ context.Context, i int, _ Step) error {
		if i == 4 {
			cancel() // as Ctrl-C would, in the middle of the plan
		}
		return nil
	}
	_, err := f.m.Deploy(ctx, f.lab)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	f.assertGone()
}

func TestPrivilegedDestroyWithFileDeleted(t *testing.T) {
	f := newFixture(t, "client-router-server.yaml")
	dir := t.TempDir()
	file := filepath.Join(dir, "lab.yaml")
	if err := os.WriteFile(file, f.source, 0o644); err != nil {
		t.Fatal(err)
	}
	f.lab.File = file
	if _, err := f.m.Deploy(context.Background(), f.lab); err != nil {
		t.Fatal(err)
	}
	os.Remove(file)
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Nodes) != 3 || !info.Nodes[0].Present {
		t.Fatalf("inspect without the file: %+v", info)
	}
	rep, err := f.m.Destroy(f.lab.Name)
	if err != nil || len(rep.Removed) != 3 {
		t.Fatalf("destroy: %+v %v", rep, err)
	}
	f.assertGone()
	rep, err = f.m.Destroy(f.lab.Name) // twice is fine
	if err != nil || rep.Found {
		t.Fatalf("second destroy: %+v %v", rep, err)
	}
}

// TestPrivilegedHalfGone removes one namespace behind nslab's back (and puts a
// foreign one in its place for another) before destroy.
func TestPrivilegedHalfGone(t *testing.T) {
	f := newFixture(t, "client-router-server.yaml")
	f.deploy()
	if err := ns.Remove(f.m.netnsDir(), f.ns("ns1")); err != nil {
		t.Fatal(err)
	}
	if err := ns.Remove(f.m.netnsDir(), f.ns("ns3")); err != nil {
		t.Fatal(err)
	}
	foreign := createForeign(t, f.m.netnsDir(), f.ns("ns3"))
	rep, err := f.m.Destroy(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 1 || len(rep.Gone) != 1 || len(rep.Skipped) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := ns.Open(f.m.netnsDir(), foreign); err != nil {
		t.Fatalf("foreign namespace was touched: %v", err)
	}
}

// createForeign makes a namespace nslab did not create (no marker).
func createForeign(t *testing.T, dir, name string) string {
	t.Helper()
	c, err := ns.NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n, err := c.Create(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	t.Cleanup(func() { ns.Remove(dir, name) })
	return name
}

func TestPrivilegedRefusesExistingNamespace(t *testing.T) {
	f := newFixture(t, "client-router-server.yaml")
	foreign := createForeign(t, f.m.netnsDir(), f.ns("ns2"))
	fn, _ := ns.Open(f.m.netnsDir(), foreign)
	ino, _ := fn.Inode()
	fn.Close()
	_, err := f.m.Deploy(context.Background(), f.lab)
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "namespace "+foreign) || !strings.Contains(err.Error(), "not created by nslab") {
		t.Fatalf("want a conflict naming %s, got %v", foreign, err)
	}
	if got := f.left(); len(got) != 1 || got[0] != foreign {
		t.Errorf("namespaces after refused deploy: %v", got)
	}
	fn, err = ns.Open(f.m.netnsDir(), foreign)
	if err != nil {
		t.Fatal(err)
	}
	if ino2, _ := fn.Inode(); ino2 != ino {
		t.Errorf("foreign namespace replaced")
	}
	fn.Close()
	if _, err := os.Stat(f.m.statePath(f.lab.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused deploy wrote state: %v", err)
	}
	// destroy of the lab must not remove the foreign namespace either
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ns.Exists(f.m.netnsDir(), foreign); !ok {
		t.Errorf("destroy removed a namespace nslab did not create")
	}
}

// TestPrivilegedLeavesSameNamedHostLinkAlone puts a veth named like a lab
// interface in the host namespace: deploy and destroy must not touch it.
func TestPrivilegedLeavesSameNamedHostLinkAlone(t *testing.T) {
	f := newFixture(t, pairYAML)
	name := "veth1"
	if _, err := netlink.LinkByName(name); err == nil {
		t.Skip("host already has a veth1")
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: labtest.Name("vp")}); err != nil {
		t.Fatal(err)
	}
	host, _ := netlink.LinkByName(name)
	t.Cleanup(func() { netlink.LinkDel(host) })
	f.deploy()
	f.ping("ns1", "192.168.1.12")
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	after, err := netlink.LinkByName(name)
	if err != nil || after.Attrs().Index != host.Attrs().Index || after.Attrs().HardwareAddr.String() != host.Attrs().HardwareAddr.String() {
		t.Fatalf("host link %s changed: %v", name, err)
	}
}

func TestPrivilegedTwoLabs(t *testing.T) {
	labtest.CoveredOnHost(t)
	a := newFixture(t, "client-router-server.yaml")
	b := newFixture(t, "client-router-server.yaml")
	b.m = a.m // same state directory: two labs side by side
	a.deploy()
	b.deploy()
	_, err := a.m.Deploy(context.Background(), a.lab)
	if err == nil || !strings.Contains(err.Error(), "already deployed") {
		t.Fatalf("second deploy of the same lab: %v", err)
	}
	labs, err := a.m.Store().List()
	if err != nil || len(labs) < 2 {
		t.Fatalf("list: %v %v", labs, err)
	}
	a.ping("ns1", "10.0.2.1")
	b.ping("ns1", "10.0.2.1")
	if _, err := a.m.Destroy(a.lab.Name); err != nil {
		t.Fatal(err)
	}
	a.assertGone()
	b.ping("ns1", "10.0.2.1") // the other lab is untouched
	if _, err := b.m.Destroy(b.lab.Name); err != nil {
		t.Fatal(err)
	}
	b.assertGone()
}

// TestPrivilegedDestroyAll uses a private namespace directory, so that --all
// sees only this test's labs.
func TestPrivilegedDestroyAll(t *testing.T) {
	labtest.CoveredOnHost(t)
	a := newFixture(t, "pair.yaml")
	b := newFixture(t, "switch.yaml")
	m := &Manager{NetnsDir: labtest.NetnsDir(t), StateDir: t.TempDir()}
	a.m, b.m = m, m
	a.deploy()
	b.deploy()
	os.Remove(m.statePath(b.lab.Name)) // one lab known only by its markers
	foreign := createForeign(t, m.NetnsDir, "foreign")
	reps, err := m.DestroyAll()
	if err != nil || len(reps) != 2 {
		t.Fatalf("destroy all: %d reports, %v", len(reps), err)
	}
	a.assertGone()
	b.assertGone()
	if ok, _ := ns.Exists(m.NetnsDir, foreign); !ok {
		t.Errorf("destroy --all removed a foreign namespace")
	}
}

func TestPrivilegedInspect(t *testing.T) {
	f := newFixture(t, "client-router-server.yaml")
	f.deploy()
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	var r inspect.NodeInfo
	for _, n := range info.Nodes {
		if n.Node == "ns2" {
			r = n
		}
		// Deploy hands over a ready lab: every veth reports up at once.
		for _, i := range n.Interfaces {
			if i.Kind == "veth" && i.State != "up" {
				t.Errorf("%s:%s is %s right after deploy", n.Node, i.Name, i.State)
			}
		}
	}
	got := map[string]inspect.IfInfo{}
	for _, i := range r.Interfaces {
		got[i.Name] = i
	}
	peer := got["veth1-peer"]
	if peer.Kind != "veth" || peer.Peer != "ns1:veth1" || peer.MTU != 1500 || len(peer.Addresses) != 1 || peer.Addresses[0] != "10.0.1.254/24" {
		t.Errorf("ns2 veth1-peer: %+v", peer)
	}
	if !r.Forwarding.IPv4 || len(r.Routes) != 2 {
		t.Errorf("ns2 forwarding/routes: %+v %+v", r.Forwarding, r.Routes)
	}
	// The MAC shown is the kernel's: compare with a netlink read of our own.
	n, _ := ns.Open(f.m.netnsDir(), f.ns("ns2"))
	defer n.Close()
	h, err := n.NetlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName("veth1-peer")
	if err != nil || l.Attrs().HardwareAddr.String() != peer.MAC {
		t.Errorf("MAC %s, kernel says %v (%v)", peer.MAC, l, err)
	}
}

// TestPrivilegedIPv6Quiet checks that lab links without IPv6 addresses carry
// no autoconfiguration traffic (no link-local address, so no DAD, router
// solicitation or MLD), while an interface with an IPv6 address gets it.
func TestPrivilegedIPv6Quiet(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, strings.Replace(pairYAML, "      veth2: {addresses: [192.168.1.12/24]}", "      veth2: {addresses: [192.168.1.12/24, \"fd00:9::2/64\"]}", 1))
	f.deploy()
	h1 := f.handle("ns1")
	v1, err := h1.LinkByName("veth1")
	if err != nil {
		t.Fatal(err)
	}
	if addrs, _ := h1.AddrList(v1, netlink.FAMILY_V6); len(addrs) != 0 {
		t.Errorf("veth1 has IPv6 addresses %v; want none", addrs)
	}
	h2 := f.handle("ns2")
	v2, _ := h2.LinkByName("veth2")
	if addrs, _ := h2.AddrList(v2, netlink.FAMILY_V6); len(addrs) == 0 {
		t.Errorf("veth2 has no IPv6 address; want fd00:9::2")
	}
	// Router solicitations and DAD would go out within about a second.
	time.Sleep(1500 * time.Millisecond)
	v1, _ = h1.LinkByName("veth1")
	if tx := v1.Attrs().Statistics.TxPackets; tx != 0 {
		t.Errorf("veth1 sent %d packets in an idle lab; want 0", tx)
	}
}

func (f *fixture) handle(node string) *netlink.Handle {
	f.t.Helper()
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		f.t.Fatal(err)
	}
	defer n.Close()
	h, err := n.NetlinkHandle()
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(h.Close)
	return h
}

// TestPrivilegedGlobalSysctlsAreGlobal checks validation's list of refused
// net.* keys against this kernel: none of them exists inside a fresh
// namespace, while a namespaced one does.
func TestPrivilegedGlobalSysctlsAreGlobal(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	dir := labtest.NetnsDir(t)
	name := createForeign(t, dir, labtest.Name("g"))
	n, err := ns.Open(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = n.Do(func() error {
		if _, err := os.Stat("/proc/sys/net/ipv4/ip_forward"); err != nil {
			t.Errorf("namespaced key missing: %v", err)
		}
		for _, k := range spec.GlobalNetSysctls() {
			p := spec.Sysctl{Key: k}.ProcPath()
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s exists inside a namespace, so it is not global", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrivilegedPlacementNeedsTheCPUs: a node placed on a CPU this machine
// does not have is refused before anything is created, in one line that
// names the node, the CPU and the machine's CPUs.
func TestPrivilegedPlacementNeedsTheCPUs(t *testing.T) {
	f := newFixture(t, strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    cpus: [4000]\n", 1))
	_, err := f.m.Deploy(context.Background(), f.lab)
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "node ns2 asks for cpu 4000") || !strings.Contains(err.Error(), "online") {
		t.Fatalf("got %v", err)
	}
	f.assertGone()
}

// TestPrivilegedInspectShowsPlacement: inspect reads the placement back
// from the kernel (RPS masks per queue, queue counts, threaded NAPI) and
// from the state.
func TestPrivilegedInspectShowsPlacement(t *testing.T) {
	labtest.CoveredOnHost(t)
	src := strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    cpus: [0]\n", 1)
	src = strings.Replace(src, "veth1: {", "veth1: {queues: 2, ", 1)
	f := newFixture(t, src)
	f.deploy()
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range info.Nodes {
		for _, i := range n.Interfaces {
			switch n.Node + ":" + i.Name {
			case "ns1:veth1":
				if i.Queues == nil || i.Queues.Rx != 2 || i.Queues.Tx != 2 || strings.Join(i.Queues.RPS, ",") != "," {
					t.Errorf("ns1:veth1 queues %+v", i.Queues)
				}
			case "ns2:veth2":
				if i.Queues == nil || strings.Join(i.Queues.RPS, ",") != "0" || n.Placement == nil || n.Placement.CPUs != "0" {
					t.Errorf("ns2:veth2 queues %+v, placement %+v", i.Queues, n.Placement)
				}
			}
		}
	}
}

const ipv6CRSYAML = `name: v6
nodes:
  c:
    interfaces:
      e0: {addresses: ["fd00:a::1/64"]}
    routes:
      - {to: default, via: "fd00:a::fe"}
  r:
    forwarding: true
    interfaces:
      e0: {addresses: ["fd00:a::fe/64"]}
      e1: {addresses: ["fd00:b::fe/64"]}
  s:
    interfaces:
      e0: {addresses: ["fd00:b::1/64"]}
    routes:
      - {to: default, via: "fd00:b::fe"}
links:
  - endpoints: [c:e0, r:e0]
  - endpoints: [r:e1, s:e0]
`

// TestPrivilegedIPv6ReadyAtOnce: the first echo across a routed IPv6 path,
// sent the moment deploy returns, is answered within 100 ms (no address,
// link-local included, is still tentative in DAD), and no node sends a
// router solicitation.
func TestPrivilegedIPv6ReadyAtOnce(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, ipv6CRSYAML)
	f.deploy()
	c, err := ns.Open(f.m.netnsDir(), f.ns("c"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := probe.Echo(c, netip.MustParseAddr("fd00:b::1"), 1, 100*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("the first echo to fd00:b::1 got no answer within 100 ms (%+v)", res)
	}
	for _, node := range []string{"c", "r", "s"} {
		h := f.handle(node)
		links, err := h.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			addrs, _ := h.AddrList(l, netlink.FAMILY_V6)
			for _, a := range addrs {
				if a.Flags&unix.IFA_F_TENTATIVE != 0 {
					t.Errorf("%s:%s: %s is tentative after deploy", node, l.Attrs().Name, a.IPNet)
				}
			}
		}
	}
	t.Run("no router solicitations", func(t *testing.T) {
		time.Sleep(1500 * time.Millisecond) // the kernel sends its first one within a second
		for _, node := range []string{"c", "s"} {
			if n := icmp6OutCount(t, f, node, "Icmp6OutRouterSolicits"); n != 0 {
				t.Errorf("%s sent %d router solicitation(s)", node, n)
			}
		}
	})
}

// icmp6OutCount reads one counter of node's /proc/net/snmp6.
func icmp6OutCount(t *testing.T, f *fixture, node, key string) int {
	t.Helper()
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var v int
	err = n.Do(func() error {
		b, err := os.ReadFile("/proc/thread-self/net/snmp6")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == key {
				v, err = strconv.Atoi(f[1])
				return err
			}
		}
		return fmt.Errorf("no %s in snmp6", key)
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// bridgeNoEntriesYAML is the lifecycle issue's own bridge example: the
// switch's ports are named only by the links and the bridge.
const bridgeNoEntriesYAML = `name: sw
nodes:
  h1: {interfaces: {e0: {addresses: [10.9.0.1/24]}}}
  h2: {interfaces: {e0: {addresses: [10.9.0.2/24]}}}
  h3: {interfaces: {e0: {addresses: [10.9.0.3/24]}}}
  sw: {bridges: {br0: {ports: [p1, p2, p3]}}}
links:
  - endpoints: [h1:e0, sw:p1]
  - endpoints: [h2:e0, sw:p2]
  - endpoints: [h3:e0, sw:p3]
`

// TestPrivilegedBridgePortsWithoutEntries deploys a switch whose ports have
// no entries under interfaces: and pings across it from h1 to h2 and h3.
func TestPrivilegedBridgePortsWithoutEntries(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, bridgeNoEntriesYAML)
	f.deploy()
	h1, err := ns.Open(f.m.netnsDir(), f.ns("h1"))
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	for _, dst := range []string{"10.9.0.2", "10.9.0.3"} {
		res, err := probe.Echo(h1, netip.MustParseAddr(dst), 3, time.Second, false)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Errorf("h1 -> %s across the bridge: no reply (%+v)", dst, res)
		}
	}
	sw := f.handle("sw")
	for _, p := range []string{"p1", "p2", "p3"} {
		l, err := sw.LinkByName(p)
		if err != nil {
			t.Fatalf("sw:%s: %v", p, err)
		}
		if br, err := sw.LinkByIndex(l.Attrs().MasterIndex); err != nil || br.Attrs().Name != "br0" {
			t.Errorf("sw:%s is not a port of br0 (%v)", p, err)
		}
	}
}

// TestPrivilegedDestroyReleasesNamespaces: a destroy holds the namespaces
// it removes until all are unmounted, then closes them: none of them is
// open in this process afterwards, and a holder that is full closes what
// it is handed at once.
func TestPrivilegedDestroyReleasesNamespaces(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, "client-router-server.yaml")
	before := openNamespaces(t)
	f.deploy()
	h := &holder{room: 1}
	var opened []*ns.NS
	for _, node := range []string{"ns1", "ns2"} {
		n, err := ns.Open(f.m.netnsDir(), f.ns(node))
		if err != nil {
			t.Fatal(err)
		}
		opened = append(opened, n)
		h.keep(n)
	}
	if opened[0].Fd() < 0 || opened[1].Fd() >= 0 {
		t.Errorf("holder with room for one: descriptors %d, %d (want the first open, the second closed)", opened[0].Fd(), opened[1].Fd())
	}
	h.release()
	if opened[0].Fd() >= 0 {
		t.Error("release left the held namespace open")
	}
	rep, err := f.m.Destroy(f.lab.Name)
	if err != nil || len(rep.Removed) != 3 {
		t.Fatalf("destroy: %+v %v", rep, err)
	}
	if after := openNamespaces(t); after != before {
		t.Errorf("network namespaces open in this process: %d before deploy, %d after destroy", before, after)
	}
	f.assertGone()
}

// openNamespaces counts this process's descriptors on network namespaces.
func openNamespaces(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		var sfs unix.Statfs_t
		if err == nil && unix.Fstatfs(fd, &sfs) == nil && sfs.Type == unix.NSFS_MAGIC {
			n++
		}
	}
	return n
}
