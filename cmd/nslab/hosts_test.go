package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// simHosts is two simulated hosts: two namespaces joined by a veth
// underlay with the addresses of examples/two-hosts.yaml, and an nslab for
// each that runs inside its host through ip netns exec, with a state
// directory of its own.
type simHosts struct {
	a, b       string // the hosts' namespaces
	onA, onB   *runner
	file, name string
}

func newSimHosts(t *testing.T) *simHosts {
	t.Helper()
	labtest.SkipUnlessRoot(t)
	s := &simHosts{a: labtest.Namespace(t, ns.DefaultDir), b: labtest.Namespace(t, ns.DefaultDir)}
	peer, err := ns.Open(ns.DefaultDir, s.b)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	ha, hb := labtest.Handle(t, ns.DefaultDir, s.a), labtest.Handle(t, ns.DefaultDir, s.b)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "under0"}, PeerName: "under0", PeerNamespace: netlink.NsFd(peer.Fd())}
	if err := ha.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		h    *netlink.Handle
		addr string
	}{{ha, "192.168.77.1/24"}, {hb, "192.168.77.2/24"}} {
		l, err := x.h.LinkByName("under0")
		if err != nil {
			t.Fatal(err)
		}
		a, _ := netlink.ParseAddr(x.addr)
		if err := x.h.AddrAdd(l, a); err != nil {
			t.Fatal(err)
		}
		if err := x.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	s.file, s.name = labFile(t, "two-hosts.yaml")
	// One command per host here: without ssh:, nslab does not reach the hosts itself.
	data, _ := os.ReadFile(s.file)
	os.WriteFile(s.file, regexp.MustCompile(`, ssh: [^}]*`).ReplaceAll(data, nil), 0o644)
	s.onA = &runner{t: t, bin: os.Args[0], stateDir: t.TempDir(), wrap: []string{"ip", "netns", "exec", s.a}}
	s.onB = &runner{t: t, bin: os.Args[0], stateDir: t.TempDir(), wrap: []string{"ip", "netns", "exec", s.b}}
	t.Cleanup(func() {
		s.onA.run("destroy", "--name", s.name)
		s.onB.run("destroy", "--name", s.name)
	})
	return s
}

// hostLinks lists the links in a host's namespace.
func hostLinks(t *testing.T, host string) []string {
	t.Helper()
	links, err := labtest.Handle(t, ns.DefaultDir, host).LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		out = append(out, l.Attrs().Name)
	}
	return out
}

// assertNothingLeft: no namespace of the lab, nothing but lo and the
// underlay in either host, no state.
func (s *simHosts) assertNothingLeft(t *testing.T) {
	t.Helper()
	if left := nsLeft(s.name, "client", "router", "server"); len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
	for _, h := range []string{s.a, s.b} {
		if got := strings.Join(hostLinks(t, h), " "); got != "lo under0" {
			t.Errorf("host %s has links %s, want lo under0", h, got)
		}
	}
	for _, r := range []*runner{s.onA, s.onB} {
		if files, _ := filepath.Glob(filepath.Join(r.stateDir, s.name+"*")); len(files) > 0 {
			t.Errorf("state left: %v", files)
		}
	}
}

// TestPrivilegedTwoHosts: each simulated host deploys its part of one lab
// file; the client on host a reaches the server on host a through the
// router on host b, over two VXLAN links; check from each host finds every
// pair as the file says; path marks the other host's hop; a count run from
// host a is exact; destroying both parts leaves nothing.
func TestPrivilegedTwoHosts(t *testing.T) {
	s := newSimHosts(t)
	if code, _, errOut := s.onA.run("deploy", s.file); code != 2 || !strings.Contains(errOut, "spans hosts a, b: say which one this machine is with --host NAME") {
		t.Fatalf("deploy without --host: %d %s", code, errOut)
	}
	// --host before the verb, or after it.
	if code, out, errOut := s.onA.run("--host", "a", "deploy", s.file); code != 0 {
		t.Fatalf("deploy host a: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := s.onB.run("deploy", "--host", "b", s.file); code != 0 || !strings.Contains(out, "(host b's part), 2 VXLAN links to other hosts") {
		t.Fatalf("deploy host b: %d %s %s", code, out, errOut)
	}
	if got := hostLinks(t, s.a); strings.Join(got, " ") != "lo under0" {
		t.Errorf("host a after deploy: %v (the VXLAN interfaces belong in the nodes)", got)
	}
	if n, err := labtest.Ping(ns.DefaultDir, s.name+"-client", netip.MustParseAddr("10.1.2.1"), 3, 2*time.Second); err != nil || n != 3 {
		t.Fatalf("client -> server through host b: %d of 3 answered, %v", n, err)
	}
	for _, x := range []struct {
		r     *runner
		host  string
		pairs string
	}{{s.onA, "a", "8 pairs: 8 answered"}, {s.onB, "b", "4 pairs: 4 answered"}} {
		if code, out, errOut := x.r.run("--host", x.host, "check", s.file); code != 0 || !strings.Contains(out, x.pairs) || !strings.Contains(out, "0 broken, 0 unexpectedly reachable") {
			t.Errorf("check on host %s: %d %s %s", x.host, code, out, errOut)
		}
	}
	code, out, errOut := s.onA.run("--host", "a", "path", s.file, "client", "10.1.2.1")
	if code != 0 || !strings.Contains(out, "agrees at every hop on this host; router on host b by the file") {
		t.Errorf("path: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := s.onA.run("inspect", "--name", s.name); code != 0 || !strings.Contains(out, "router:eth0 on host b (VNI ") || !strings.Contains(out, "vxlan") {
		t.Errorf("inspect on host a: %d %s %s", code, out, errOut)
	}
	code, out, errOut = s.onA.run("--host", "a", "bench", "-q", "--traffic", "through-b", "--count", "20000", "--format", "json", s.file)
	var rep struct {
		Sent, Received, Unaccounted int64
		Hops                        []struct {
			After string `json:"after_other_hosts"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("bench: %d %v %s %s", code, err, out, errOut)
	}
	if rep.Sent != 20000 || rep.Received != 20000 || rep.Unaccounted != 0 || len(rep.Hops) != 2 || rep.Hops[1].After != "router on host b" {
		t.Errorf("bench across host b: %+v", rep)
	}
	testShapedOnHostB(t, s)
	if code, _, errOut := s.onB.run("--host", "b", "bench", "-q", "--traffic", "through-b", s.file); code != 1 || !strings.Contains(errOut, "client is on host a") {
		t.Errorf("bench on host b of a run sent from host a: %d %s", code, errOut)
	}
	for _, r := range []*runner{s.onA, s.onB} {
		if code, out, errOut := r.run("destroy", "--name", s.name); code != 0 {
			t.Fatalf("destroy: %d %s %s", code, out, errOut)
		}
	}
	s.assertNothingLeft(t)
}

// TestPrivilegedHostPartKilled: SIGKILL during host a's deploy, at each
// step of its first VXLAN interface (before it is made, after it is made
// in the host namespace, after it moved into its node), then destroy:
// nothing is left, in the host namespace either.
func TestPrivilegedHostPartKilled(t *testing.T) {
	s := newSimHosts(t)
	s.onA.env = []string{"NSLAB_HOST=a"}
	for _, k := range []int{3, 4, 5} { // steps 3 and 4 make and move the first VXLAN
		cmd := startPaused(t, s.onA, s.file, k)
		cmd.Process.Kill()
		cmd.Wait()
		inHost := strings.Contains(strings.Join(hostLinks(t, s.a), " "), "nslx")
		if (k == 4) != inHost {
			t.Errorf("k=%d: a VXLAN in host a: %v (want one only between its creation and its move)", k, inHost)
		}
		if code, out, errOut := s.onA.run("destroy", "--name", s.name); code != 0 {
			t.Fatalf("k=%d: destroy: %d %s %s", k, code, out, errOut)
		}
		s.assertNothingLeft(t)
	}
}

// TestPrivilegedPartScripts: host a's part of the two-host lab, built by
// the script of `nslab --host a deploy --dry-run` (run on host a as a user
// would, in its network namespace), is what nslab builds: the same links
// (the VXLAN interfaces with their VNI, addresses and port), addresses,
// routes and sysctls, and the client reaches the server through the
// router nslab built on host b. The script of `nslab --host a destroy
// --dry-run` removes that part, and a VXLAN interface a deploy script
// left in the host namespace when it stopped there, and nothing of host
// b's.
func TestPrivilegedPartScripts(t *testing.T) {
	for _, tool := range []string{"bash", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	s := newSimHosts(t)
	if code, out, errOut := s.onB.run("--host", "b", "deploy", s.file); code != 0 {
		t.Fatalf("deploy host b: %d %s %s", code, out, errOut)
	}
	partA := []string{s.name + "-client", s.name + "-server"}
	if code, out, errOut := s.onA.run("--host", "a", "deploy", s.file); code != 0 {
		t.Fatalf("deploy host a: %d %s %s", code, out, errOut)
	}
	want := partSnapshot(t, partA)
	if code, out, errOut := s.onA.run("destroy", "--name", s.name); code != 0 {
		t.Fatalf("destroy host a: %d %s %s", code, out, errOut)
	}
	deploy := s.dryRun(t, "deploy", s.file)
	destroy := s.dryRun(t, "destroy", "-t", s.file)

	runOnHost(t, s.a, deploy)
	compareParts(t, want, partSnapshot(t, partA))
	if n, err := labtest.Ping(ns.DefaultDir, s.name+"-client", netip.MustParseAddr("10.1.2.1"), 3, 2*time.Second); err != nil || n != 3 {
		t.Errorf("client -> server through host b, host a's part built by its script: %d of 3 answered, %v", n, err)
	}
	if got := strings.Join(hostLinks(t, s.a), " "); got != "lo under0" {
		t.Errorf("host a after the deploy script: %s, want lo under0", got)
	}
	runOnHost(t, s.a, destroy)
	if left := nsLeft(s.name, "client", "server"); len(left) > 0 {
		t.Errorf("the destroy script left %v", left)
	}
	if left := nsLeft(s.name, "router"); len(left) != 1 {
		t.Errorf("host a's destroy script removed host b's router")
	}

	// A deploy script stopped after it made the first VXLAN interface.
	stopped, _, found := strings.Cut(deploy, "\n# step 4:")
	if !found {
		t.Fatalf("no step 4 in the deploy script:\n%s", deploy)
	}
	runOnHost(t, s.a, stopped)
	if got := strings.Join(hostLinks(t, s.a), " "); !strings.Contains(got, "nslx") {
		t.Fatalf("host a after the deploy script's step 3: %s, want its VXLAN interface", got)
	}
	runOnHost(t, s.a, destroy)
	if code, out, errOut := s.onB.run("destroy", "--name", s.name); code != 0 {
		t.Fatalf("destroy host b: %d %s %s", code, out, errOut)
	}
	s.assertNothingLeft(t)
}

// dryRun returns the script of `nslab --host a VERB --dry-run ARGS` on host a.
func (s *simHosts) dryRun(t *testing.T, verb string, args ...string) string {
	t.Helper()
	code, out, errOut := s.onA.run(append([]string{"--host", "a", verb, "--dry-run"}, args...)...)
	if code != 0 {
		t.Fatalf("%s --dry-run: %d %s", verb, code, errOut)
	}
	return out
}

// runOnHost runs a bash script in the network namespace of a simulated
// host, and in the machine's mount namespace, where `ip netns add` keeps
// the namespaces it names (ip netns exec would give the script a mount
// namespace of its own, and they would vanish with it).
func runOnHost(t *testing.T, host, script string) {
	t.Helper()
	cmd := exec.Command("nsenter", "--net="+filepath.Join(ns.DefaultDir, host), "bash", "-s")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script on host %s: %v\n%s\nscript:\n%s", host, err, out, script)
	}
}

// partSnapshot describes what the kernel holds in the given namespaces:
// "namespace/kind/object" -> its settings. Links with their VXLAN
// attributes, addresses, routes of every table, and every sysctl.
func partSnapshot(t *testing.T, namespaces []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range namespaces {
		h := labtest.Handle(t, ns.DefaultDir, name)
		links, err := h.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		ifname := map[int]string{}
		for _, l := range links {
			ifname[l.Attrs().Index] = l.Attrs().Name
		}
		for _, l := range links {
			a := l.Attrs()
			desc := fmt.Sprintf("type=%s mac=%s mtu=%d flags=%s alias=%q", l.Type(), a.HardwareAddr, a.MTU, a.Flags, a.Alias)
			if vx, ok := l.(*netlink.Vxlan); ok {
				desc += fmt.Sprintf(" vni=%d local=%s remote=%s port=%d learning=%v ttl=%d", vx.VxlanId, vx.SrcAddr, vx.Group, vx.Port, vx.Learning, vx.TTL)
			}
			out[name+"/link/"+a.Name] = desc
			addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
			if err != nil {
				t.Fatal(err)
			}
			for _, ad := range addrs {
				out[name+"/addr/"+a.Name+"/"+ad.IPNet.String()] = fmt.Sprintf("brd=%v scope=%d flags=%#x", ad.Broadcast, ad.Scope, ad.Flags)
			}
		}
		routes, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			out[fmt.Sprintf("%s/route/%d/%v/%s/%d", name, r.Table, r.Dst, ifname[r.LinkIndex], r.Family)] = fmt.Sprintf("gw=%v src=%v scope=%d proto=%d metric=%d type=%d", r.Gw, r.Src, r.Scope, r.Protocol, r.Priority, r.Type)
		}
		for k, v := range labtest.Sysctls(t, ns.DefaultDir, name) {
			out[name+"/sysctl/"+k] = v
		}
	}
	return out
}

// compareParts reports every object that nslab and the script built
// differently, or only one of them built.
func compareParts(t *testing.T, want, got map[string]string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(want))
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if w, g := want[k], got[k]; w != g {
			t.Errorf("%s:\n  nslab:  %s\n  script: %s", k, w, g)
		}
	}
}

// TestPrivilegedKilledBetweenMoveAndRename: a deploy killed inside the
// move of a VXLAN interface, after it went into its node and before it
// was renamed there, leaves it in the node under its host name. destroy
// must delete it there too: a namespace someone still holds (here the
// test, as a shell or the kernel's background teardown would) keeps the
// device and its VNI taken in host a otherwise.
func TestPrivilegedKilledBetweenMoveAndRename(t *testing.T) {
	s := newSimHosts(t)
	s.onA.env = []string{"NSLAB_HOST=a"}
	cmd := startPaused(t, s.onA, s.file, 5) // the first VXLAN moved, renamed in its node
	cmd.Process.Kill()
	cmd.Wait()
	nsName := s.name + "-client"
	h := labtest.Handle(t, ns.DefaultDir, nsName)
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	vx, ok := eth0.(*netlink.Vxlan)
	if !ok {
		t.Fatalf("client:eth0 is a %s, want the VXLAN", eth0.Type())
	}
	hostName := fmt.Sprintf("nslx%d", vx.VxlanId)
	if err := h.LinkSetName(eth0, hostName); err != nil { // as the kill before the rename left it
		t.Fatal(err)
	}
	held, err := ns.Open(ns.DefaultDir, nsName)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if code, out, errOut := s.onA.run("destroy", "--name", s.name); code != 0 {
		t.Fatalf("destroy: %d %s %s", code, out, errOut)
	}
	s.assertNothingLeft(t)
	hh, err := netlink.NewHandleAt(netns.NsHandle(held.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer hh.Close()
	if l, err := hh.LinkByName(hostName); err == nil {
		t.Errorf("%s (VNI %d) is still in the destroyed client namespace, which holds the VNI in host a: %+v", hostName, vx.VxlanId, l.Attrs())
	}
}

// testShapedOnHostB shapes host b's router to 10 Mbit/s and sends through
// it from host a faster than that: the receiver's rate is over the time it
// received in (the shaper's queue delivers for a second after the sender
// stops, and this host cannot see that queue), so it is the shaper's
// rate, and what the queue delivered after the sending is counted as
// received, not lost. The run is short: a steady window of it would be
// the draining, and there is none.
func testShapedOnHostB(t *testing.T, s *simHosts) {
	t.Helper()
	if code, out, errOut := s.onB.run("--host", "b", "impair", "router:eth1", "--rate", "10Mbit"); code != 0 {
		t.Fatalf("impair on host b: %d %s %s", code, out, errOut)
	}
	defer s.onB.run("--host", "b", "impair", "router:eth1", "--clear")
	code, out, errOut := s.onA.run("--host", "a", "bench", "-q", "--traffic", "through-b", "--frame", "1400", "--count", "5000", "--rate", "max", "--format", "json", s.file)
	var rep struct {
		Sent, Received, Loss, Unaccounted int64
		ReceiveWindow                     time.Duration `json:"receive_window_ns"`
		MbpsL2                            float64       `json:"mbps_l2"`
		SteadyL2                          float64       `json:"steady_mbps_l2"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("shaped bench: %d %v %s %s", code, err, out, errOut)
	}
	t.Logf("shaped on host b: sent %d, received %d in %s, %.2f Mb/s", rep.Sent, rep.Received, rep.ReceiveWindow, rep.MbpsL2)
	// The shaper passes its queue (about a thousand full frames) and its
	// bucket; a receiver that stopped counting when the sending did would
	// have taken in the tenth of a second the sending lasted.
	if rep.ReceiveWindow < 500*time.Millisecond || rep.MbpsL2 < 8 || rep.MbpsL2 > 11 || rep.Unaccounted != 0 || rep.Sent != rep.Received+rep.Loss || rep.SteadyL2 != 0 {
		t.Errorf("shaped across host b: %+v; want a receive window of the draining (a second or so) at about 10 Mbit/s, no steady window", rep)
	}
}
