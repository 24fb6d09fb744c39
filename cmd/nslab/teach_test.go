package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
)

// The teaching commands: graph, path, check, and the dry-run scripts.

func TestGraphCommand(t *testing.T) {
	c := newCLI(t)
	for format, want := range map[string]string{
		"text":    "ns1 -> ns2 (router) -> ns3\n",
		"dot":     `"ns1":"p0":e -- "ns2":"p0":w;`,
		"mermaid": `ns1 ---|"veth1 — veth1-peer"| ns2`,
	} {
		code, out, errOut := c.run("graph", "--format", format, "-t", "../../examples/client-router-server.yaml")
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("graph --format %s: code %d, stderr %q, output:\n%s", format, code, errOut, out)
		}
	}
	if code, _, errOut := c.run("graph", "--format", "svg", "../../examples/pair.yaml"); code != 2 || !strings.Contains(errOut, "text, dot or mermaid") {
		t.Errorf("unknown format: code %d, %q", code, errOut)
	}
}

func TestPathCommand(t *testing.T) {
	c := newCLI(t)
	code, out, errOut := c.run("path", "-t", "../../examples/two-routers.yaml", "client", "10.2.0.2")
	if code != 0 {
		t.Fatalf("path: code %d, %s", code, errOut)
	}
	for _, want := range []string{"client:eth0 -> 10.2.0.2 (server:eth0), source 10.1.0.2: from the file",
		"r1      eth0  eth1  10.12.0.2 gateway", "3 IP hop(s) through 2 router(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("path output lacks %q:\n%s", want, out)
		}
	}
	// TO as a node, JSON out.
	code, out, _ = c.run("path", "--format", "json", "../../examples/switch.yaml", "h1", "h2")
	var p struct {
		Hops []struct {
			Node string `json:"node"`
			L2   bool   `json:"l2"`
			MAC  string `json:"next_mac"`
		} `json:"hops"`
	}
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || len(p.Hops) != 3 || !p.Hops[1].L2 || p.Hops[0].MAC != "02:00:00:00:09:12" {
		t.Errorf("path json: code %d, %v, %+v", code, err, p)
	}
	// Unreachable: clear message, exit 1.
	data, err := os.ReadFile("../../examples/two-routers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y, _, _ := strings.Cut(string(data), "traffic:")
	bad := filepath.Join(t.TempDir(), "chain.yaml")
	os.WriteFile(bad, []byte(strings.Replace(y, "      - {to: 10.2.0.0/24, via: 10.12.0.2}\n", "", 1)), 0o644)
	code, _, errOut = c.run("path", "-t", bad, "client", "10.2.0.2")
	if code != 1 || !strings.Contains(errOut, "client cannot reach 10.2.0.2: node r1 has no route to 10.2.0.2: add one under nodes.r1.routes") {
		t.Errorf("unreachable: code %d, %q", code, errOut)
	}
	for _, args := range [][]string{{"path", bad, "nobody", "10.2.0.2"}, {"path", bad, "client", "nowhere"}, {"path", bad, "client"}} {
		if code, _, errOut := c.run(args...); code != 2 || errOut == "" {
			t.Errorf("%v: code %d, %q", args, code, errOut)
		}
	}
}

// TestDryRunsChangeNothing: the dry runs print scripts, need no root and
// create nothing.
func TestDryRunsChangeNothing(t *testing.T) {
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	code, out, errOut := c.run("deploy", "--dry-run", "-t", file)
	if code != 0 || !strings.HasPrefix(out, "#!/bin/bash\n") ||
		!strings.Contains(out, "ip netns add "+name+"-ns1\n") ||
		!strings.Contains(out, "ip -n "+name+"-ns1 link add veth1 address ") ||
		!strings.Contains(out, "ip netns exec "+name+"-ns2 sysctl -qw net.ipv4.ip_forward=1") ||
		!strings.Contains(out, "ip -n "+name+"-ns3 route add default via 10.0.2.254") {
		t.Errorf("deploy --dry-run: code %d, %s\n%s", code, errOut, out)
	}
	if msg, err := exec.Command("bash", "-n", "-c", out).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v %s", err, msg)
	}
	code, out, errOut = c.run("destroy", "--dry-run", "-t", file)
	if code != 0 || !strings.Contains(out, "owned "+name+"-ns1 nslab:"+name+":ns1 && ip netns del "+name+"-ns1") {
		t.Errorf("destroy --dry-run: code %d, %s\n%s", code, errOut, out)
	}
	code, out, errOut = c.run("bench", "--dry-run", "-t", file)
	if code != 0 || !strings.Contains(out, "echo 'dst 10.0.2.1' > $PG/veth1") || !strings.Contains(out, "ip netns exec "+name+"-ns1 sh") {
		t.Errorf("bench --dry-run: code %d, %s\n%s", code, errOut, out)
	}
	if ok, _ := ns.Exists(ns.DefaultDir, name+"-ns1"); ok {
		t.Error("a dry run created a namespace")
	}
	if ents, _ := os.ReadDir(c.stateDir); len(ents) > 0 {
		t.Errorf("a dry run wrote state: %v", ents)
	}
}

// TestPrivilegedPathAndCheckDeployed: on a deployed lab, path reads MACs
// from the kernel and bench --dry-run uses the same MAC; check passes,
// then fails (exit 1) naming the pairs once a route is removed.
func TestPrivilegedPathAndCheckDeployed(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // reads kernels, measures no rate: beside the waiting tests
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	if code, _, errOut := c.run("deploy", file); code != 0 {
		t.Fatal(errOut)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	code, out, errOut := c.run("path", "--format", "json", file, "ns1", "ns3")
	var p struct {
		Deployed bool `json:"deployed"`
		Hops     []struct {
			MAC string `json:"next_mac"`
		} `json:"hops"`
	}
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || !p.Deployed {
		t.Fatalf("path: code %d %v %s", code, err, errOut)
	}
	_, script, _ := c.run("bench", "--dry-run", file)
	if !strings.Contains(script, "echo 'dst_mac "+p.Hops[0].MAC+"' > $PG/veth1") {
		t.Errorf("bench --dry-run does not use path's MAC %s:\n%s", p.Hops[0].MAC, script)
	}
	code, out, errOut = c.run("check", file)
	if code != 0 || !strings.Contains(out, "12 pairs: 12 answered and 0 stayed silent as the routes say; 0 broken, 0 unexpectedly reachable") {
		t.Fatalf("check: code %d, %s\n%s", code, errOut, out)
	}
	if out, err := exec.Command("ip", "-n", name+"-ns3", "route", "del", "default").CombinedOutput(); err != nil {
		t.Fatalf("ip route del: %v %s", err, out)
	}
	// The kernel lacks a route the file declares: the pairs that needed
	// it are broken (the file's routes say they answer), and check fails.
	code, out, errOut = c.run("check", "--format", "list", file)
	if code != 1 || !strings.Contains(out, "ns3: the file's route 0.0.0.0/0 via 10.0.2.254 is not in the kernel") ||
		!strings.Contains(out, "3 broken, 0 unexpectedly reachable") {
		t.Errorf("check after removing a route: code %d, %s\n%s", code, errOut, out)
	}
	code, _, errOut = c.run("path", file, "ns3", "ns1") // the way there needs the route
	if code != 1 || !strings.Contains(errOut, "ns3 cannot reach 10.0.1.1: node ns3 has no route to 10.0.1.1 in its kernel") ||
		!strings.Contains(errOut, "ns3: the file's route 0.0.0.0/0 via 10.0.2.254 is not in the kernel") {
		t.Errorf("path after removing a route: code %d, %s", code, errOut)
	}
	// Without root, path looks among the user's rootless labs, where
	// root's is not: it says so and answers from the file.
	os.Chmod(filepath.Dir(file), 0o755)
	os.Chmod(file, 0o644)
	code, out, errOut = asNobodyRootless(t).run("path", file, "ns1", "ns3")
	if code != 0 || !strings.Contains(out, "from the file (the lab is not among this user's rootless labs; one deployed by root is root's to ask)") {
		t.Errorf("path as nobody: code %d, %s\n%s", code, errOut, out)
	}
}

// TestPrivilegedHandRouteAndNothingToCheck is issue 34's teaching-lab
// exercise: the file leaves r1 without its route to the server's subnet,
// and the student adds it by hand. Before, validate names the run's
// place; after, path follows the route, check and bench report it as a
// difference from the file, and bench runs and balances. A lab without
// an address gives check nothing to check, and that fails.
func TestPrivilegedHandRouteAndNothingToCheck(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "two-routers.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, []byte(strings.Replace(string(data), "      - {to: 10.2.0.0/24, via: 10.12.0.2}\n", "", 1)), 0o644)
	if code, _, errOut := c.run("validate", file); code != 1 || !strings.Contains(errOut, ":44:9: traffic[0].to: node r1 has no route to 10.2.0.2") {
		t.Errorf("validate before deploy: code %d, %s", code, errOut)
	}
	code, out, errOut := c.run("deploy", file)
	if code != 0 || !strings.Contains(out, "note: ") {
		t.Fatalf("deploy: code %d, %s\n%s", code, errOut, out)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, _, errOut := c.run("exec", "--name", name, "r1", "--", "ip", "route", "add", "10.2.0.0/24", "via", "10.12.0.2"); code != 0 {
		t.Fatalf("the route by hand: %s", errOut)
	}
	const diff = "r1: route 10.2.0.0/24 via 10.12.0.2 dev eth1 (protocol boot) is in the kernel, not in the file"
	code, out, errOut = c.run("path", file, "client", "10.2.0.2")
	if code != 0 || !strings.Contains(out, "r1      eth0  eth1  10.12.0.2 gateway") || !strings.Contains(out, diff) {
		t.Errorf("path: code %d, %s\n%s", code, errOut, out)
	}
	code, out, errOut = c.run("check", file)
	if code != 0 || !strings.Contains(out, diff) || !strings.Contains(out, "0 broken, 0 unexpectedly reachable") {
		t.Errorf("check: code %d, %s\n%s", code, errOut, out)
	}
	// The JSON carries the same finding.
	code, out, errOut = c.run("check", "--format", "json", file)
	var got struct {
		Pairs       []json.RawMessage `json:"pairs"`
		Differences []struct{ Node, What string }
		OK          bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || !got.OK || len(got.Pairs) == 0 ||
		!slices.ContainsFunc(got.Differences, func(d struct{ Node, What string }) bool { return d.Node+": "+d.What == diff }) {
		t.Errorf("check --format json: code %d, %v, %s\n%s", code, err, errOut, out)
	}
	if code, out, errOut := c.run("validate", file); code != 0 || !strings.Contains(out, "the deployed lab's kernels give them one") {
		t.Errorf("validate after the route: code %d, %s\n%s", code, errOut, out)
	}
	code, out, errOut = c.run("bench", "--duration", "1s", "--rate", "20kpps", file)
	if code != 0 || !strings.Contains(out, "the kernel differs from the file (the run went by the kernel): "+diff) || !strings.Contains(out, "+ unaccounted 0") {
		t.Errorf("bench: code %d, %s\n%s", code, errOut, out)
	}

	empty := filepath.Join(t.TempDir(), "empty.yaml")
	ename := labtest.Name("c")
	os.WriteFile(empty, labtest.Rename([]byte("name: x\nnodes:\n  a: {}\n  b: {}\nlinks:\n  - endpoints: [a:e0, b:e0]\n"), ename), 0o644)
	if code, _, errOut := c.run("deploy", empty); code != 0 {
		t.Fatal(errOut)
	}
	t.Cleanup(func() { c.run("destroy", "--name", ename) })
	if code, out, _ := c.run("check", empty); code != 1 || !strings.Contains(out, "nothing was checked") {
		t.Errorf("check with nothing to check: code %d, %s", code, out)
	}
}
