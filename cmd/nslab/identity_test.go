package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/netfilter"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// laptopPair writes the laptop lab under a random name twice: the file as
// the user has edited it (its WAN link's impairments a rate and a delay, as
// its variant wan-delay has them), and a copy as the example is (a rate
// alone: tbf, which this kernel has). The lab's service (busybox httpd) is
// left out of both.
func laptopPair(t *testing.T) (file, deployedCopy, name string) {
	data, err := os.ReadFile("../../examples/laptop-lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	name = labtest.Name("id")
	src := string(labtest.Rename(data, name))
	src = regexp.MustCompile(`(?m)^    run:\n      - .*\n`).ReplaceAllString(src, "")
	if strings.Contains(src, "httpd") {
		t.Fatal("the laptop lab's run: line is still there: the test's edit no longer matches the example")
	}
	dir := t.TempDir()
	file, deployedCopy = filepath.Join(dir, "laptop.yaml"), filepath.Join(dir, "laptop-copy.yaml")
	edited := strings.ReplaceAll(src, "impair: {rate: 10Mbit}", "impair: {delay: 20ms, rate: 10Mbit}")
	if strings.Count(src, "impair: {rate: 10Mbit}") != 2 {
		t.Fatal("the laptop lab no longer has its two impairments: the test's edit no longer matches the example")
	}
	for p, s := range map[string]string{file: edited, deployedCopy: src} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return file, deployedCopy, name
}

// TestPrivilegedLabIdentity: with the lab of a file's name deployed from
// another file, every verb given the file refuses in one line naming the
// impairments that differ and the two ways on, and measures nothing; with
// --as-deployed it acts on the lab as deployed and stamps that file's
// path and hash.
func TestPrivilegedLabIdentity(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // every verb is refused before it measures: beside the waiting tests
	c := newCLI(t)
	file, deployedCopy, name := laptopPair(t)
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, out, errOut := c.run("deploy", deployedCopy); code != 0 {
		t.Fatalf("deploy the copy: %d %s %s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"bench", "-q", "--traffic", "wan", "--duration", "1s", file},
		{"check", file},
		{"test", file},
		{"path", file, "client", "203.0.113.2"},
		{"top", "--once", file},
		{"web", file},
		{"metrics", "--once", file},
		{"inspect", file},
		{"node", "stop", "-t", file, "server"},
		{"link", "down", "-t", file, "router:wan0"},
		{"impair", "-t", file, "client:eth0", "--rate", "1Mbit"},
		{"destroy", file},
	} {
		code, out, errOut := c.run(args...)
		line := strings.TrimSpace(errOut)
		if code == 0 || out != "" || strings.Count(line, "\n") != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want one line on stderr, nothing measured", args[0], code, out, errOut)
			continue
		}
		for _, want := range []string{"lab " + name + " was deployed from another file: " + deployedCopy,
			"the deployed lab has impair router:wan0", "the file has impair router:wan0", "server:eth0", "Nothing was done"} {
			if !strings.Contains(line, want) {
				t.Errorf("%s: %q does not say %q", args[0], line, want)
			}
		}
		if args[0] != "destroy" && !strings.Contains(line, "nslab apply "+file) || !strings.Contains(line, "--as-deployed") {
			t.Errorf("%s: %q does not give the two ways on", args[0], line)
		}
	}
	if code, out, errOut := c.run("inspect", "--name", name); code != 0 || !strings.Contains(out, "router") {
		t.Fatalf("the refusals changed the lab: inspect %d %s %s", code, out, errOut)
	}

	// --as-deployed: measured, and the report names the copy and its hash.
	data, err := os.ReadFile(deployedCopy)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	code, out, errOut := c.run("bench", "--as-deployed", "-q", "--traffic", "wan", "--duration", "1s", "--format", "json", file)
	var rep struct {
		Env struct {
			LabHash    string `json:"lab_sha256"`
			LabFile    string `json:"lab_file"`
			AsDeployed bool   `json:"as_deployed"`
		} `json:"environment"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("bench --as-deployed: %d %.400s %s", code, out, errOut)
	}
	if rep.Env.LabHash != hex.EncodeToString(sum[:]) || rep.Env.LabFile != deployedCopy || !rep.Env.AsDeployed {
		t.Errorf("bench --as-deployed stamped %+v, want the copy %s and its sha256", rep.Env, deployedCopy)
	}
	code, out, errOut = c.run("bench", "--as-deployed", "-q", "--traffic", "wan", "--duration", "1s", file)
	if code != 0 || !strings.Contains(out, "lab file "+deployedCopy+" as deployed (not the file given)\nsha256 "+hex.EncodeToString(sum[:])) {
		t.Errorf("bench --as-deployed's report does not name the copy: %d %s %s", code, out, errOut)
	}
	if code, out, errOut = c.run("check", "--as-deployed", file); code != 0 {
		t.Errorf("check --as-deployed of the lab as deployed: %d %s %s", code, out, errOut)
	}
}

// TestPrivilegedCheckKernelLacksTheFile: check FILE fails when a node's
// kernel lacks what the file declares: an impairment taken off by hand is
// named, and a route deleted by hand is named with the pairs it breaks
// (they are not "silent as the routes say").
func TestPrivilegedCheckKernelLacksTheFile(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // reads kernels, measures no rate: beside the waiting tests
	c := newCLI(t)
	_, file, name := laptopPair(t) // the copy: impairments this kernel has
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, out, errOut := c.run("deploy", file); code != 0 {
		t.Fatalf("deploy: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := c.run("check", file); code != 0 {
		t.Fatalf("check of the lab as its file says: %d %s %s", code, out, errOut)
	}
	h := labtest.Handle(t, ns.DefaultDir, name+"-router")
	wan, err := h.LinkByName("wan0")
	if err != nil {
		t.Fatal(err)
	}
	qs, err := h.QdiscList(wan)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			if err := h.QdiscDel(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, out, errOut := c.run("check", file)
	if code != 1 || !strings.Contains(out, "router: wan0: the file's impairment tbf rate 10Mbit is not in the kernel (it has none)") ||
		!strings.Contains(out, "the kernels lack 1 thing(s) the file declares") {
		t.Errorf("check with router:wan0's impairment gone: %d %s %s", code, out, errOut)
	}

	hc := labtest.Handle(t, ns.DefaultDir, name+"-client")
	routes, err := hc.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	for _, r := range routes {
		if r.Dst == nil || r.Dst.String() == "0.0.0.0/0" {
			if err := hc.RouteDel(&r); err != nil {
				t.Fatal(err)
			}
			deleted = true
		}
	}
	if !deleted {
		t.Fatal("the client has no default route to delete")
	}
	code, out, errOut = c.run("check", file)
	server := netip.MustParseAddr("203.0.113.2")
	if code != 1 || !strings.Contains(out, "client: the file's route 0.0.0.0/0 via 192.168.1.1 is not in the kernel") ||
		!strings.Contains(out, "BROKEN      client -> "+server.String()) || strings.Contains(out, " 0 broken") {
		t.Errorf("check with the client's default route gone: %d %s %s", code, out, errOut)
	}
}

// TestPrivilegedCheckLacksRulesAndFirewall: check fails, naming what is
// gone, when a node's kernel lacks a policy rule the file declares (the
// policy-routing example's rule, deleted by hand) or the node's NAT and
// firewall table (the NAT example's, removed by hand).
func TestPrivilegedCheckLacksRulesAndFirewall(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // reads kernels, measures no rate: beside the waiting tests
	c := newCLI(t)
	for _, x := range []struct {
		example, node, want string
		remove              func(t *testing.T, nsName string)
	}{
		{"policy-routing.yaml", "r", "r: the file's rule 32765: from 10.0.2.0/24 lookup 100 is not in the kernel", func(t *testing.T, nsName string) {
			h := labtest.Handle(t, ns.DefaultDir, nsName)
			rs, err := h.RuleList(netlink.FAMILY_V4)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.Table == 100 {
					if err := h.RuleDel(&r); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
		{"nat-router.yaml", "gw", "gw: the file's NAT and firewall rules (table inet nslab) are not in the kernel", func(t *testing.T, nsName string) {
			n, err := ns.Open(ns.DefaultDir, nsName)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if err := netfilter.Remove(n.Fd()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		file, name := labFile(t, x.example)
		t.Cleanup(func() { c.run("destroy", "--name", name) })
		if code, out, errOut := c.run("deploy", file); code != 0 {
			t.Fatalf("%s: deploy: %d %s %s", x.example, code, out, errOut)
		}
		// (The policy-routing example's check finds two pairs broken on
		// today's main, a walk that applies no rule to a router's own
		// replies: before the removal, only that nothing is lacking.)
		if code, out, errOut := c.run("check", file); strings.Contains(out, "the kernels lack") || code > 1 {
			t.Fatalf("%s: check of the lab as its file says: %d %s %s", x.example, code, out, errOut)
		}
		x.remove(t, name+"-"+x.node)
		code, out, errOut := c.run("check", file)
		if code != 1 || !strings.Contains(out, "the kernels lack") || !strings.Contains(out, x.want) {
			t.Errorf("%s: check with it gone: %d %s %s", x.example, code, out, errOut)
		}
	}
}

// TestPrivilegedCollisionNamesTheOtherLab: a deploy whose namespaces are
// another nslab lab's is refused naming that lab and the command that
// removes it, and the other lab is left as it is.
func TestPrivilegedCollisionNamesTheOtherLab(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	first, name := labFile(t, "pair.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, out, errOut := c.run("deploy", first); code != 0 {
		t.Fatalf("deploy: %d %s %s", code, out, errOut)
	}
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	other := labtest.Name("o")
	second := filepath.Join(t.TempDir(), "second.yaml")
	os.WriteFile(second, []byte(strings.Replace(string(data), "name: "+name+"\n", "name: "+other+"\n", 1)), 0o644)
	t.Cleanup(func() { c.run("destroy", "--name", other) })
	code, out, errOut := c.run("deploy", second)
	if code == 0 || !strings.Contains(errOut, "namespace "+name+"-ns1 (node ns1) is node ns1 of nslab lab "+name) || !strings.Contains(errOut, "(nslab destroy --name "+name+")") {
		t.Errorf("deploy over another lab's namespaces: %d %s %s", code, out, errOut)
	}
	if code, out, _ := c.run("inspect", "--name", name); code != 0 || !strings.Contains(out, name+"-ns1") {
		t.Errorf("the other lab was touched: %d %s", code, out)
	}
}

// TestPrivilegedPrefixBeside: bgp-pair.yaml as the example has it (nodes
// h1, h2, r1, r2, no prefix) beside another lab whose nodes are h1 and h2:
// nslab test is refused naming that lab; with --prefix it deploys beside
// it, passes 5 of 5, and leaves the other lab as it was.
func TestPrivilegedPrefixBeside(t *testing.T) {
	file, name := routingLab(t, "bgp-pair.yaml")
	t.Parallel() // waits on BGP's timers: alongside the other waiting tests
	c := newCLI(t)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "bgp.yaml")
	os.WriteFile(plain, regexp.MustCompile(`(?m)^prefix: .*\n`).ReplaceAll(data, nil), 0o644)
	other := labtest.Name("h")
	otherFile := filepath.Join(t.TempDir(), "other.yaml")
	os.WriteFile(otherFile, []byte("name: "+other+"\nnodes:\n  h1:\n    interfaces:\n      e0: {addresses: [10.77.0.1/24]}\n  h2:\n    interfaces:\n      e0: {addresses: [10.77.0.2/24]}\nlinks:\n  - endpoints: [h1:e0, h2:e0]\n"), 0o644)
	t.Cleanup(func() { c.run("destroy", "--name", other) })
	if code, out, errOut := c.run("deploy", otherFile); code != 0 {
		t.Fatalf("deploy the other lab: %d %s %s", code, out, errOut)
	}
	before := inspectJSON(t, c, other)
	code, out, errOut := c.run("test", plain)
	if code == 0 || !strings.Contains(errOut, "namespace h1 (node h1) is node h1 of nslab lab "+other) {
		t.Errorf("test beside a lab with h1 and h2: %d %s %s", code, out, errOut)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	code, out, errOut = c.run("test", "--prefix", name+"p-", plain)
	if code != 0 || !strings.Contains(out, "5 of 5 tests passed") {
		t.Errorf("test --prefix beside it: %d %s %s", code, out, errOut)
	}
	if after := inspectJSON(t, c, other); after != before {
		t.Errorf("the other lab changed:\nbefore %s\nafter  %s", before, after)
	}
	// Deployed with --prefix, the verbs after it find the lab without it;
	// another prefix names namespaces it does not have, and is refused.
	if code, out, errOut := c.run("deploy", "--prefix", name+"q-", plain); code != 0 {
		t.Fatalf("deploy --prefix: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := c.run("inspect", plain); code != 0 || !strings.Contains(out, name+"q-r1") {
		t.Errorf("inspect without --prefix after deploy --prefix: %d %s %s", code, out, errOut)
	}
	if _, _, errOut := c.run("path", plain, "h1", "10.1.0.1"); strings.Contains(errOut, "does not exist") || strings.Contains(errOut, "not node") {
		t.Errorf("path without --prefix after deploy --prefix looked for other namespaces: %s", errOut)
	}
	if code, _, errOut := c.run("check", "--prefix", "zz-", plain); code != 2 || !strings.Contains(errOut, `is deployed here with the prefix "`+name+`q-"`) {
		t.Errorf("check with another prefix: %d %s", code, errOut)
	}
}

// TestPrivilegedCheckRouterLostARoute: in the chain of two routers, r2's
// route back to the client's network, which the file declares, deleted
// by hand: check exits 1 naming the route, and every pair that needs it
// (the client's and r1's echoes beyond r2, answered only by way of that
// route) is BROKEN naming it, none "silent as the routes say".
func TestPrivilegedCheckRouterLostARoute(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // reads kernels, measures no rate: beside the waiting tests
	c := newCLI(t)
	file, name := labFile(t, "two-routers.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, out, errOut := c.run("deploy", file); code != 0 {
		t.Fatalf("deploy: %d %s %s", code, out, errOut)
	}
	h := labtest.Handle(t, ns.DefaultDir, name+"-r2")
	routes, err := h.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == "10.1.0.0/24" {
			if err := h.RouteDel(&r); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("deleted %d routes to 10.1.0.0/24 in r2", deleted)
	}
	code, out, errOut := c.run("check", "--format", "list", file)
	lost := "r2: the file's route 10.1.0.0/24 via 10.12.0.1 is not in the kernel"
	if code != 1 || !strings.Contains(out, "the kernels lack 1 thing(s) the file declares") || !strings.Contains(out, lost) {
		t.Fatalf("check with r2's route gone: %d %s %s", code, out, errOut)
	}
	for _, pair := range []string{"client -> 10.2.0.2", "client -> 10.12.0.2", "server -> 10.1.0.2", "r2 -> 10.1.0.2"} {
		if !strings.Contains(out, "BROKEN      "+pair) {
			t.Errorf("pair %s is not broken:\n%s", pair, out)
		}
	}
	if strings.Count(out, "BROKEN      ") != strings.Count(out, lost)-1 {
		t.Errorf("a broken pair does not name the lost route:\n%s", out)
	}
}
