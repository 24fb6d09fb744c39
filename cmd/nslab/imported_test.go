package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/corpus"
	"github.com/nslab/nslab/internal/labtest"
)

// The labs under examples/imported were taken from public repositories
// (each lab.yaml says which, at which commit, and its NOTICE under which
// licence). Each runs here as a user would run it: deploy, wait for its
// daemons with check --wait, compare what they learned with what the
// original expects, path and a short bench of its traffic run (which must
// balance), destroy.

// importedLab copies examples/imported/DIR to a temporary directory, its
// lab file (labFile) renamed, and returns that file and the new name.
func importedLab(t *testing.T, dir, labFile string) (file, name string) {
	t.Helper()
	src := filepath.Join("../../examples/imported", dir)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	name = labtest.Name("i")
	file = filepath.Join(dst, labFile)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, labtest.Rename(data, name), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, name
}

var pairsRE = regexp.MustCompile(`(\d+) pairs: (\d+) answered`)

// imported is a lab of examples/imported and what its test runs.
type imported struct {
	dir, file string   // the directory, its nslab lab file
	from, to  string   // nslab path FROM TO
	bench     []string // bench's run: its flags (none: the file's first traffic run); --from NODE: its interface toward to, as the kernel routes
	// compare (nil: none) checks what the daemons learned against the
	// original's expected outputs.
	compare func(c *runner, name, labDir string)
	// after (nil: none) runs after the bench, before the destroy.
	after func(c *runner, name, file string)
}

// runImported deploys an imported lab, waits for its routing, compares,
// and checks path and a 2 s bench (balanced, its bottleneck known), then
// destroy, which leaves no namespace.
func runImported(t *testing.T, x imported) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // each waits for its daemons, most of the time idle
	c := newCLI(t)
	file, name := importedLab(t, x.dir, x.file)
	if code, out, errOut := c.run("deploy", file); code != 0 {
		t.Fatalf("deploy: %s\n%s", errOut, out)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	// A settle longer than OSPF's own steps: on a broadcast segment a
	// router waits its dead interval (40 s by default) before electing a
	// DR, and the shorter path through the segment comes after a 2 s calm
	// on the longer one (seen once: the bench's path changed after check
	// had called it converged).
	code, out, errOut := c.run("check", "--wait", "150s", "--settle", "10s", "--format", "list", file)
	m := pairsRE.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] == "0" || !strings.Contains(out, "converged in") {
		t.Fatalf("check --wait: code %d, %s\n%s", code, errOut, out)
	}
	t.Logf("check --wait: %s", lastLine(out))
	// The original's checks, as the lab file's tests: (deployed: test
	// neither deploys nor destroys it).
	if code, out, errOut := c.run("test", file); code != 0 || !regexp.MustCompile(`: (\d+) of (\d+) tests passed, 0 failed`).MatchString(out) {
		t.Errorf("test: code %d, %s\n%s", code, errOut, out)
	}
	if x.compare != nil {
		x.compare(c, name, filepath.Dir(file))
	}
	code, out, errOut = c.run("path", "--format", "json", file, x.from, x.to)
	if code != 0 {
		t.Errorf("path %s %s: code %d, %s\n%s", x.from, x.to, code, errOut, out)
	}
	bench := slices.Clone(x.bench)
	if i := slices.Index(bench, "--from"); i >= 0 && i+1 < len(bench) && !strings.Contains(bench[i+1], ":") {
		// Sent out of the interface the kernel's routes take now: two
		// equal paths may be learned in either order (RIP takes the first
		// update), so the sender's interface is read, not assumed.
		var p struct {
			Hops []struct{ Out string } `json:"hops"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil || len(p.Hops) == 0 || p.Hops[0].Out == "" {
			t.Fatalf("path --format json: %v %s", err, out)
		}
		bench[i+1] += ":" + p.Hops[0].Out
	}
	code, out, errOut = c.run(append(append([]string{"bench", "--duration", "2s"}, bench...), file)...)
	if code != 0 || !strings.Contains(out, "+ unaccounted 0\n") || strings.Contains(out, "bottleneck: unknown") {
		t.Errorf("bench: code %d, %s\n%s", code, errOut, out)
	}
	if x.after != nil {
		x.after(c, name, file)
	}
	if code, out, errOut := c.run("destroy", "--name", name); code != 0 {
		t.Fatalf("destroy: %s\n%s", errOut, out)
	}
	netns, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(netns), name) {
		t.Errorf("destroy left namespaces: %s", netns)
	}
}

// TestPrivilegedImportedOSPF6Topotest is FRR's topotest ospf6_topo1: its
// daemons must reach the topotest's expected kernel routes (link-local
// next hops named by the neighbour's interface, as the topotest masks
// them) and OSPFv3 routes.
func TestPrivilegedImportedOSPF6Topotest(t *testing.T) {
	runImported(t, imported{dir: "frr-ospf6-topo1", file: "lab.yaml", from: "r1", to: "fc00:4:4:4::4", compare: func(c *runner, name, dir string) {
		lls := linkLocals(t, c, name, []string{"r1", "r2", "r3", "r4"})
		for _, r := range []string{"r1", "r2", "r3", "r4"} {
			compareKernelTable(t, c, name, r, dir, lls)
			compareOSPF6Routes(t, c, name, r, dir)
		}
		assertInspect(t, c, name, `(?m)^r3 +" +ospf6 +10\.0\.0\.4 on r3-sw6 +Full`)
	}})
}

// linkLocals maps every link-local address of the routers to the
// interface that holds it.
func linkLocals(t *testing.T, c *runner, name string, routers []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range routers {
		code, text, errOut := c.run("exec", "--name", name, r, "--", "ip", "-6", "-o", "addr", "show", "scope", "link")
		if code != 0 {
			t.Fatalf("%s: %s", r, errOut)
		}
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			if len(f) >= 4 {
				out[strings.Split(f[3], "/")[0]] = strings.Split(f[1], "@")[0]
			}
		}
	}
	return out
}

var (
	protoRE = regexp.MustCompile(`[ ]+proto [0-9a-z]+ +`)
	nhidRE  = regexp.MustCompile(`[ ]+nhid [0-9]+ +`)
	spaceRE = regexp.MustCompile(`  +`)
)

// compareKernelTable is the topotest's test_linux_ipv6_kernel_routingTable:
// the router's `ip -6 route`, link-locals replaced by the interface that
// holds them, protocol and nexthop ids masked, fe80::/64 and ff00::/8
// left out, sorted, against ip_6_address.ref (.nhg.ref with nexthop ids).
func compareKernelTable(t *testing.T, c *runner, name, r, dir string, lls map[string]string) {
	t.Helper()
	code, actual, errOut := c.run("exec", "--name", name, r, "--", "ip", "-6", "route")
	if code != 0 {
		t.Fatalf("%s: %s", r, errOut)
	}
	ref := "ip_6_address.ref"
	if strings.Contains(actual, "nhid") {
		ref = "ip_6_address.nhg.ref"
	}
	want, err := os.ReadFile(filepath.Join(dir, r, ref))
	if err != nil {
		t.Fatal(err)
	}
	for ll, ifname := range lls {
		actual = strings.ReplaceAll(actual, ll+" ", "fe80::__("+ifname+")__ ")
	}
	actual = nhidRE.ReplaceAllString(protoRE.ReplaceAllString(actual, "  proto XXXX "), " nhid XXXX ")
	var lines []string
	for _, l := range strings.Split(actual, "\n") {
		l = spaceRE.ReplaceAllString(strings.TrimSpace(l), " ")
		if l == "" || strings.HasPrefix(l, "fe80::/64 ") || strings.HasPrefix(l, "ff00::/8") || strings.HasPrefix(l, "unreachable fe80::/64 ") {
			continue
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	if got, w := strings.Join(lines, "\n"), strings.TrimSpace(string(want)); got != w {
		t.Errorf("%s's kernel IPv6 routes differ from the topotest's %s:\n got\n%s\n want\n%s", r, ref, got, w)
	}
}

var clockRE = regexp.MustCompile(` [0-2][0-9]:[0-5][0-9]:[0-5][0-9]`)
var llRE = regexp.MustCompile(`fe80::[^ ]+,`)

// compareOSPF6Routes is the topotest's test_ospfv3_routingTable on the
// routes zebra installed: the O>* lines of `show ipv6 route`, timestamps
// and link-locals masked as the topotest masks them, against
// show_ipv6_route.ref. (Debian's FRR 8.4 also prints OSPF's routes to its
// own connected networks, O without >*, which the topotest's newer FRR
// does not: they are left out.)
func compareOSPF6Routes(t *testing.T, c *runner, name, r, dir string) {
	t.Helper()
	code, out, errOut := c.run("exec", "--name", name, r, "--", "vtysh", "-c", "show ipv6 route")
	if code != 0 {
		t.Fatalf("%s: %s", r, errOut)
	}
	want, err := os.ReadFile(filepath.Join(dir, r, "show_ipv6_route.ref"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "O>*") {
			got = append(got, strings.TrimSpace(llRE.ReplaceAllString(clockRE.ReplaceAllString(l, " XX:XX:XX"), "fe80::XXXX:XXXX:XXXX:XXXX,")))
		}
	}
	if g, w := strings.Join(got, "\n"), strings.TrimSpace(string(want)); g != w {
		t.Errorf("%s's OSPFv3 routes differ from the topotest's:\n got\n%s\n want\n%s", r, g, w)
	}
}

// TestPrivilegedImportedBGPUnnumbered is FRR's topotest bgp_ipv6_rtadv:
// BGP over the interface, peers found by router advertisements, IPv4
// routes through IPv6 link-local next hops. Each router's `show ip route
// json` and `show ipv6 route json` must hold the topotest's expected JSON,
// compared as the topotest's json_cmp does.
func TestPrivilegedImportedBGPUnnumbered(t *testing.T) {
	runImported(t, imported{dir: "frr-bgp-ipv6-rtadv", file: "lab.yaml", from: "r1", to: "10.254.254.2", compare: func(c *runner, name, dir string) {
		for _, r := range []string{"r1", "r2"} {
			for cmd, file := range map[string]string{"show ip route json": "ipv4_routes.json", "show ipv6 route json": "ipv6_routes.json"} {
				compareJSON(t, c, name, r, cmd, filepath.Join(dir, r, file))
			}
		}
	}})
}

// TestPrivilegedImportedContainerlabFRR is containerlab's lab example
// frr01: three FRR routers in an OSPF triangle (their addresses in
// frr.conf), three PCs addressed and routed by exec lines. Its nslab file
// is what nslab import writes (the test imports it again and compares),
// with an expect: block after it. The original expects every PC to reach
// every other; its routers' loopbacks are in no OSPF network.
func TestPrivilegedImportedContainerlabFRR(t *testing.T) {
	assertImport(t, "clab-frr01", "frr01.nslab.yaml", "containerlab", "frr01.clab.yml")
	runImported(t, imported{dir: "clab-frr01", file: "frr01.nslab.yaml", from: "PC1", to: "PC3",
		bench: []string{"--from", "PC1:eth1", "--to", "192.168.13.2", "--rate", "20kpps"}})
}

// TestPrivilegedImportedContainerlabEBGP is the lab bgp-ebgp-basics of
// ciscoittech/containerlab-free-labs: four FRR routers in a chain, each
// its own AS but r1 and r4 (both AS 100), every address set by exec lines,
// only the loopbacks announced. Its expect: block says what that gives
// (loopback to loopback, as the lab's validate.sh pings, but not between
// r1 and r4); the daemons must reach what validate.sh asks of them.
func TestPrivilegedImportedContainerlabEBGP(t *testing.T) {
	assertImport(t, "clab-ebgp-basics", "nslab.yaml", "containerlab", "topology.clab.yml")
	runImported(t, imported{dir: "clab-ebgp-basics", file: "nslab.yaml", from: "r1", to: "192.168.3.1",
		bench: []string{"--from", "r1:eth1", "--to", "192.168.3.1", "--rate", "20kpps"},
		compare: func(c *runner, name, _ string) {
			// validate.sh's tests 1-5: the sessions up, r1 has learned
			// r2's and r3's networks (r3's through AS 200 then 300), r4
			// has r3's.
			holdsJSON(t, c, name, "r2", "show ip bgp summary json", "r2's two sessions established",
				`{"ipv4Unicast": {"peers": {"10.1.1.1": {"state": "Established"}, "10.2.2.2": {"state": "Established"}}}}`)
			holdsJSON(t, c, name, "r1", "show ip bgp json", "r1's routes, 192.168.3.0/24 through AS 200 then 300",
				`{"routes": {"192.168.1.0/24": [{"valid": true}], "192.168.2.0/24": [{"valid": true, "path": "200"}], "192.168.3.0/24": [{"valid": true, "path": "200 300"}]}}`)
			holdsJSON(t, c, name, "r4", "show ip bgp json", "r4's route to r3's network",
				`{"routes": {"192.168.3.0/24": [{"valid": true, "path": "300"}]}}`)
		}})
}

// assertImport runs nslab import FORMAT SOURCE on a copy of an imported
// lab's directory and requires the committed lab file to start with what
// it writes.
func assertImport(t *testing.T, dir, labFile, format, source string) {
	t.Helper()
	c := newCLI(t)
	file, _ := importedLab(t, dir, labFile)
	out := filepath.Join(filepath.Dir(file), "imported.yaml")
	want, err := os.ReadFile(filepath.Join("../../examples/imported", dir, labFile))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`(?m)^name: (\S+)$`).FindSubmatch(want)
	if name == nil {
		t.Fatal("the committed lab file has no name: line")
	}
	// Options after the operand, as a user may write them.
	code, stdout, errOut := c.run("import", format, filepath.Join(filepath.Dir(file), source), "--out", out, "--name", string(name[1]))
	if code != 0 || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("import: code %d, %s\n%s", code, errOut, stdout)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(want), string(got)) {
		t.Errorf("examples/imported/%s/%s does not start with what nslab import writes today:\n%s", dir, labFile, got)
	}
}

// compareJSON requires the router's output of vtysh command cmd to hold
// the expected JSON of file: json_cmp's rule, every key of an object and
// every element of a list found in the output, in any order.
func compareJSON(t *testing.T, c *runner, name, r, cmd, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	holdsJSON(t, c, name, r, cmd, file, string(data))
}

// holdsJSON requires the router's output of vtysh command cmd to hold the
// JSON wantJSON (what, for messages), by json_cmp's rule (see compareJSON).
func holdsJSON(t *testing.T, c *runner, name, r, cmd, what, wantJSON string) {
	t.Helper()
	var want any
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	// The routes converge after check's pairs answer (BGP's own routes to
	// connected networks): a while, as the topotest waits too.
	var got any
	for range 60 {
		code, out, errOut := c.run("exec", "--name", name, r, "--", "vtysh", "-c", cmd)
		if code != 0 {
			t.Fatalf("%s %s: %s", r, cmd, errOut)
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s %s: %v", r, cmd, err)
		}
		if jsonHolds(got, want) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	g, _ := json.MarshalIndent(got, "", " ")
	t.Errorf("%s: %s does not hold %s:\n%s", r, cmd, what, g)
}

// jsonHolds is topotest's json_cmp: want's objects' keys and values are in
// got's, each element of a list of want matches a distinct one of got's.
func jsonHolds(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !jsonHolds(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		used := make([]bool, len(g))
	next:
		for _, wv := range w {
			for i, gv := range g {
				if !used[i] && jsonHolds(gv, wv) {
					used[i] = true
					continue next
				}
			}
			return false
		}
		return true
	}
	return got == want
}

// TestPrivilegedImportedKatharaRIP is Kathara's RIP lab: five routers on
// links and stub collision domains (segments of one interface), every
// address set by its startup file, RIP from the kathara/frr image. r5 has
// no route back by design (the lab's exercise is to give it one), which
// the kernels' routes say, so check converges without it.
func TestPrivilegedImportedKatharaRIP(t *testing.T) {
	assertImport(t, "kathara-rip", "nslab.yaml", "kathara", ".")
	runImported(t, imported{dir: "kathara-rip", file: "nslab.yaml", from: "r2", to: "100.1.4.1",
		bench: []string{"--from", "r2", "--to", "100.1.4.1", "--rate", "20kpps"}, // r2's interface: the one its learned route takes
		compare: func(c *runner, name, _ string) {
			assertInspect(t, c, name, `(?m)^r2 +frr: .*ripd running +rip +100\.1\.0\.(1|6) +update`)
		}})
}

// TestPrivilegedImportedKatharaQuaggaRIP is Kathara's RIP lab for its
// Quagga image: the same five routers as kathara-rip, their RIP in
// Quagga's files (/etc/quagga: daemons, zebra.conf, ripd.conf) and no
// line that starts it (in Kathara, a student's first command). The
// import runs them with FRR's daemons, which learn each other's LANs by
// RIP on the lab's ripd.conf; with r1's ripd stopped, check fails and
// names it.
func TestPrivilegedImportedKatharaQuaggaRIP(t *testing.T) {
	assertImport(t, "kathara-quagga-rip", "nslab.yaml", "kathara", ".")
	runImported(t, imported{dir: "kathara-quagga-rip", file: "nslab.yaml", from: "r2", to: "100.1.4.1",
		bench: []string{"--from", "r2", "--to", "100.1.4.1", "--rate", "20kpps"},
		compare: func(c *runner, name, _ string) {
			assertInspect(t, c, name, `(?m)^r2 +frr: .*ripd running +rip +100\.1\.0\.(1|6) +update`)
		},
		after: func(c *runner, name, file string) {
			// ripd stopped as a person would, by its pid: inspect's.
			var info struct {
				Nodes []struct {
					Node    string `json:"node"`
					Routing *struct {
						Daemons []struct {
							Name string `json:"name"`
							PID  int    `json:"pid"`
						} `json:"daemons"`
					} `json:"routing"`
				} `json:"nodes"`
			}
			_, out, _ := c.run("inspect", "--name", name, "--format", "json")
			_ = json.Unmarshal([]byte(out), &info)
			pid := 0
			for _, n := range info.Nodes {
				if n.Node != "r1" || n.Routing == nil {
					continue
				}
				for _, d := range n.Routing.Daemons {
					if d.Name == "ripd" {
						pid = d.PID
					}
				}
			}
			if pid == 0 {
				t.Fatalf("no ripd of r1 in inspect's JSON: %s", out)
			}
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "r1's ripd to exit", func() bool { return syscall.Kill(pid, 0) != nil })
			code, out, errOut := c.run("check", file)
			if code == 0 || !strings.Contains(out+errOut, "the file runs FRR's ripd, which is not running") {
				t.Errorf("check with r1's ripd stopped: exit %d\n%s%s", code, out, errOut)
			}
		}})
}

// TestPrivilegedImportedKatharaOSPF is Kathara's single-area OSPF lab:
// five routers, two collision domains of three (segments), two links,
// addresses from the startup files, FRR started by them.
func TestPrivilegedImportedKatharaOSPF(t *testing.T) {
	assertImport(t, "kathara-ospf", "nslab.yaml", "kathara", ".")
	runImported(t, imported{dir: "kathara-ospf", file: "nslab.yaml", from: "bb1", to: "10.0.1.2",
		bench: []string{"--from", "bb1:eth0", "--to", "10.0.1.2", "--rate", "20kpps"}})
}

// ospfSwitchLab is two FRR routers on a shared segment, OSPF hellos every
// second (flooded by the segment's bridge to every port), a host behind
// each.
const ospfSwitchLab = `name: x
nodes:
  h1:
    interfaces: {eth0: {addresses: [10.1.0.2/24]}}
    routes: [{to: default, via: 10.1.0.1}]
  h2:
    interfaces: {eth0: {addresses: [10.2.0.2/24]}}
    routes: [{to: default, via: 10.2.0.1}]
  r1:
    forwarding: true
    interfaces: {eth0: {addresses: [10.1.0.1/24]}, eth1: {addresses: [10.0.0.1/24]}}
    frr:
      daemons: [ospfd]
      config: |
        interface eth1
         ip ospf hello-interval 1
         ip ospf dead-interval 3
        router ospf
         network 10.0.0.0/24 area 0
         redistribute connected
  r2:
    forwarding: true
    interfaces: {eth0: {addresses: [10.2.0.1/24]}, eth1: {addresses: [10.0.0.2/24]}}
    frr:
      daemons: [ospfd]
      config: |
        interface eth1
         ip ospf hello-interval 1
         ip ospf dead-interval 3
        router ospf
         network 10.0.0.0/24 area 0
         redistribute connected
links:
  - endpoints: [h1:eth0, r1:eth0]
  - endpoints: [h2:eth0, r2:eth0]
segments:
  - {name: sw, endpoints: [r1:eth1, r2:eth1]}
traffic:
  - {name: h1-h2, from: h1:eth0, to: 10.2.0.2, rate: 20kpps, duration: 3s}
`

// TestPrivilegedBenchThroughOSPFSwitch: a run through a bridge that
// floods OSPF hellos balances with unaccounted 0 (the hellos are not the
// run's packets) and names the offered rate as its bottleneck when it
// lost nothing; the hellos are counted as control frames at the switch's
// ports. 20 kpps is well within this machine's reach, yet with the
// suite's other tests running beside it CI lost 21 packets once (12802
// backlog drops on one CPU), all named: a loss is allowed, not an
// unnamed one.
func TestPrivilegedBenchThroughOSPFSwitch(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel()
	c := newCLI(t)
	name := labtest.Name("o")
	file := filepath.Join(t.TempDir(), "ospfsw.yaml")
	if err := os.WriteFile(file, labtest.Rename([]byte(ospfSwitchLab), name), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	code, out, errOut := c.run("bench", "--wait", "60s", file)
	// What the sender kept of the 60000 asked depends on the machine;
	// every frame it sent is accounted.
	balanced := regexp.MustCompile(`sent (\d+) = received (\d+) \+ named drops (\d+) \+ unaccounted 0`).FindStringSubmatch(out)
	if code != 0 || balanced == nil {
		t.Fatalf("bench: code %d, %s\n%s", code, errOut, out)
	}
	sent, _ := strconv.Atoi(balanced[1])
	received, _ := strconv.Atoi(balanced[2])
	named, _ := strconv.Atoi(balanced[3])
	// With nothing lost the path kept up: the bottleneck is the offered
	// rate, or the sender when it did not send the 60000 asked (CI's
	// parallel tests once took the sender's CPUs for 2.6 s of its 3).
	senderShort := sent < 60000 && strings.Contains(out, "bottleneck: sender h1")
	if sent != received+named || named == 0 && !strings.Contains(out, "bottleneck: offered rate") && !senderShort {
		t.Fatalf("bench: sent %d, received %d, named %d, and with nothing lost the bottleneck is the offered rate or a sender that fell short:\n%s", sent, received, named, out)
	}
	// Each router's hellos enter the switch at its port and leave at the
	// other's: control frames counted in the NEIGH column (the switch-in
	// row's last column).
	m := regexp.MustCompile(`(?m)^switch in +sw:p\d +\d+ +\d+ +\d+ +\d+ +(\d+)$`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Errorf("no control frames counted at the switch's port during a 3 s run with hellos every second:\n%s", out)
	}
}

// assertInspect requires nslab inspect's output to match pattern.
func assertInspect(t *testing.T, c *runner, name, pattern string) {
	t.Helper()
	code, out, errOut := c.run("inspect", "--name", name)
	if code != 0 || !regexp.MustCompile(pattern).MatchString(out) {
		t.Errorf("inspect: code %d, %s; want a line matching %s in:\n%s", code, errOut, pattern, out)
	}
}

// TestPrivilegedImportedKatharaExercise is Kathara's two exercises,
// "simple configuration" and "add one router", with their lab checker's
// configuration (solution/*.json and the structure it names) imported as
// tests: each exercise's starting lab fails exactly what the solution
// adds (add one router: the new router r3 and host pc3, r1's and r2's
// links to r3, the routes through it, and reaching pc3; simple
// configuration: pc2's addresses and routes, and reaching it and from
// it), and passes what the start already has; the lab completed as the
// solution's structure and expectations say passes every test.
func TestPrivilegedImportedKatharaExercise(t *testing.T) {
	t.Parallel() // beside the other tests that wait for labs
	for _, ex := range []struct {
		dir, solution string
		tests         int
		fails         []string
		done          map[string]string // the completed lab's startup files
	}{{
		dir: "kathara-exercise-add-router", solution: "add_one_router_solution.json", tests: 39,
		fails: []string{
			"pc3:eth0 has 100.3.0.2/24", "r1:eth2 has 10.0.0.5/30", "r2:eth2 has 10.0.0.9/30",
			"r3:eth0 has 100.3.0.1/24", "r3:eth1 has 10.0.0.6/30", "r3:eth2 has 10.0.0.10/30",
			"pc3 has a route to 100.3.0.0/24", "pc3 has a route to 0.0.0.0/0",
			"r1 has a route to 100.3.0.0/24 via 10.0.0.6", "r1 has a route to 10.0.0.4/30",
			"r2 has a route to 100.3.0.0/24 via 10.0.0.10", "r2 has a route to 10.0.0.8/30",
			"r3 has a route to 100.1.0.0/24 via 10.0.0.5", "r3 has a route to 100.2.0.0/24 via 10.0.0.9",
			"r3 has a route to 100.3.0.0/24", "r3 has a route to 10.0.0.4/30", "r3 has a route to 10.0.0.8/30",
			"pc1 -> 100.3.0.2 reachable", "pc2 -> 100.3.0.2 reachable", "pc3 -> 100.1.0.2 reachable", "pc3 -> 100.2.0.2 reachable",
		},
		done: map[string]string{
			"pc1.startup": "ip address add 100.1.0.2/24 dev eth0\nip route add default via 100.1.0.1\n",
			"pc2.startup": "ip address add 100.2.0.2/24 dev eth0\nip route add default via 100.2.0.1\n",
			"pc3.startup": "ip address add 100.3.0.2/24 dev eth0\nip route add default via 100.3.0.1\n",
			"r1.startup":  "ip address add 100.1.0.1/24 dev eth0\nip address add 10.0.0.1/30 dev eth1\nip address add 10.0.0.5/30 dev eth2\nip route add 100.2.0.0/24 via 10.0.0.2\nip route add 100.3.0.0/24 via 10.0.0.6\n",
			"r2.startup":  "ip address add 100.2.0.1/24 dev eth0\nip address add 10.0.0.2/30 dev eth1\nip address add 10.0.0.9/30 dev eth2\nip route add 100.1.0.0/24 via 10.0.0.1\nip route add 100.3.0.0/24 via 10.0.0.10\n",
			"r3.startup":  "ip address add 100.3.0.1/24 dev eth0\nip address add 10.0.0.6/30 dev eth1\nip address add 10.0.0.10/30 dev eth2\nip route add 100.1.0.0/24 via 10.0.0.5\nip route add 100.2.0.0/24 via 10.0.0.9\n",
		},
	}, {
		dir: "kathara-exercise-simple", solution: "simple_configuration_solution.json", tests: 14,
		fails: []string{
			"pc2:eth0 has 100.2.0.2/24", "pc2:eth1 has 100.3.0.2/24",
			"pc2 has a route to 100.1.0.0/24", "pc2 has a route to 100.2.0.0/24", "pc2 has a route to 100.3.0.0/24",
			"pc1 -> 100.2.0.2 reachable", "pc1 -> 100.3.0.2 reachable", "pc2 -> 100.1.0.1 reachable", "pc2 -> 100.2.0.1 reachable",
		},
		done: map[string]string{
			"pc2.startup": "ip address add 100.2.0.2/24 dev eth0\nip address add 100.3.0.2/24 dev eth1\nip route add 100.1.0.0/24 via 100.2.0.1 dev eth0\n",
		},
	}} {
		t.Run(ex.dir, func(t *testing.T) {
			assertImport(t, ex.dir, "nslab.yaml", "kathara", "lab")
			labtest.SkipUnlessRoot(t)
			t.Parallel()
			katharaExercise(t, ex.dir, ex.solution, ex.tests, ex.fails, ex.done)
		})
	}
}

// katharaExercise deploys and tests the exercise in examples/imported/dir as
// imported, and requires of its tests' total and failing ones what
// TestPrivilegedImportedKatharaExercise says; then completes it (the
// solution's structure as its lab.conf, done's startup files), imports
// it again and requires every test to pass.
func katharaExercise(t *testing.T, dir, solution string, tests int, want []string, done map[string]string) {
	c := newCLI(t)
	failed := func(file string) (all int, fails []string) {
		t.Helper()
		if code, _, errOut := c.run("deploy", "-q", file); code != 0 {
			t.Fatalf("deploy %s: %s", file, errOut)
		}
		code, out, errOut := c.run("test", "--format", "json", file)
		c.run("destroy", file)
		var res struct {
			Tests []struct {
				Name string `json:"name"`
				Pass bool   `json:"pass"`
			} `json:"tests"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Tests) == 0 {
			t.Fatalf("test %s: exit %d: %v\n%s%s", file, code, err, out, errOut)
		}
		for _, r := range res.Tests {
			if !r.Pass {
				fails = append(fails, r.Name)
			}
		}
		return len(res.Tests), fails
	}
	start, _ := importedLab(t, dir, "nslab.yaml")
	all, fails := failed(start)
	slices.Sort(fails)
	want = slices.Sorted(slices.Values(want))
	if all != tests || !slices.Equal(fails, want) {
		t.Errorf("the starting lab: %d tests, failed %q; want %d, failing exactly %q", all, fails, tests, want)
	}

	// The lab completed: the structure as its lab.conf, each startup file
	// as the solution's expectations say.
	completed := filepath.Join(t.TempDir(), "ex")
	for _, d := range []string{"lab", "solution"} {
		if err := os.CopyFS(filepath.Join(completed, d), os.DirFS(filepath.Join("../../examples/imported", dir, d))); err != nil {
			t.Fatal(err)
		}
	}
	structure, err := os.ReadFile(filepath.Join(completed, "solution", "structure"))
	if err != nil {
		t.Fatal(err)
	}
	files := maps.Clone(done)
	files["lab.conf"] = string(structure)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(completed, "lab", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(completed, "lab", "nslab.yaml")
	if code, out, errOut := c.run("import", "kathara", "--name", labtest.Name("i"), "--out", file, filepath.Join(completed, "lab")); code != 0 || !strings.Contains(out, fmt.Sprintf("tests: %d from ../solution/%s", tests, solution)) {
		t.Fatalf("import the completed lab: %d %s %s", code, out, errOut)
	}
	if all, fails := failed(file); all != tests || len(fails) != 0 {
		t.Errorf("the completed lab: %d tests, failed %q; want %d, none failing", all, fails, tests)
	}
}

// TestPrivilegedVendoredKatharaLabs runs the Kathara labs vendored under
// examples/imported as make corpus-kathara runs a checkout of Kathara's
// (internal/corpus, with this binary as nslab): each imports, validates,
// deploys, converges (check with 0 broken) and destroys clean, and the
// table says so. In parallel with the other tests that wait for routing:
// the OSPF lab alone takes some 50 s to converge (its routers wait out
// the dead interval before electing a designated router).
func TestPrivilegedVendoredKatharaLabs(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel()
	c := newCLI(t)
	r := corpus.Runner{Command: c.cmd, Wait: 120 * time.Second, Name: func(string) string { return labtest.Name("k") }, Parallel: 8}
	labs, err := r.Labs("../../examples/imported")
	if err != nil {
		t.Fatal(err)
	}
	if len(labs) < 2 {
		t.Fatalf("examples/imported holds %d Kathara labs: %v", len(labs), labs)
	}
	results, err := r.Run("../../examples/imported")
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	corpus.Table(&table, results)
	t.Logf("\n%s", table.String())
	for _, x := range results {
		if x.Failed != "" || !slices.Equal(x.Passed, corpus.Stages) {
			t.Errorf("%s: passed %v, failed %s: %s", x.Dir, x.Passed, x.Failed, x.Reason)
		}
	}
	if len(results) != len(labs) {
		t.Errorf("%d results for %d labs:\n%s", len(results), len(labs), table.String())
	}
}
