package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/labtest"
)

// The labs under examples/imported were taken from public repositories
// (each lab.yaml says which, at which commit, and its NOTICE under which
// licence). Each runs here as a user would run it: deploy, wait for its
// daemons with check --wait, compare what they learned with what the
// original expects, path and a short bench of its traffic run (which must
// balance), destroy.

// importedLab copies examples/imported/DIR to a temporary directory, lab
// renamed, and returns its lab.yaml and the new name.
func importedLab(t *testing.T, dir string) (file, name string) {
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
	file = filepath.Join(dst, "lab.yaml")
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

// runImported deploys an imported lab, waits for its routing, and checks
// path and bench on its first traffic run; compare (nil: none) checks
// what the daemons learned against the original's expected outputs.
func runImported(t *testing.T, dir, from, to string, compare func(c *runner, name, labDir string)) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := importedLab(t, dir)
	if code, out, errOut := c.run("deploy", file); code != 0 {
		t.Fatalf("deploy: %s\n%s", errOut, out)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	code, out, errOut := c.run("check", "--wait", "120s", "--format", "list", file)
	m := pairsRE.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] == "0" || !strings.Contains(out, "converged in") {
		t.Fatalf("check --wait: code %d, %s\n%s", code, errOut, out)
	}
	t.Logf("check --wait: %s", lastLine(out))
	if compare != nil {
		compare(c, name, filepath.Dir(file))
	}
	if code, out, errOut := c.run("path", file, from, to); code != 0 {
		t.Errorf("path %s %s: code %d, %s\n%s", from, to, code, errOut, out)
	}
	code, out, errOut = c.run("bench", "--duration", "2s", file)
	if code != 0 || !strings.Contains(out, "+ unaccounted 0\n") || strings.Contains(out, "bottleneck: unknown") {
		t.Errorf("bench: code %d, %s\n%s", code, errOut, out)
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
	runImported(t, "frr-ospf6-topo1", "r1", "fc00:4:4:4::4", func(c *runner, name, dir string) {
		lls := linkLocals(t, c, name, []string{"r1", "r2", "r3", "r4"})
		for _, r := range []string{"r1", "r2", "r3", "r4"} {
			compareKernelTable(t, c, name, r, dir, lls)
			compareOSPF6Routes(t, c, name, r, dir)
		}
	})
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
	runImported(t, "frr-bgp-ipv6-rtadv", "r1", "10.254.254.2", func(c *runner, name, dir string) {
		for _, r := range []string{"r1", "r2"} {
			for cmd, file := range map[string]string{"show ip route json": "ipv4_routes.json", "show ipv6 route json": "ipv6_routes.json"} {
				compareJSON(t, c, name, r, cmd, filepath.Join(dir, r, file))
			}
		}
	})
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
	var want any
	if err := json.Unmarshal(data, &want); err != nil {
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
	t.Errorf("%s: %s does not hold %s:\n%s", r, cmd, file, g)
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
