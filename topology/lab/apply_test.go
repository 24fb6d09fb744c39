//go:build !vmtest

// The VM (emulated CPUs) leaves these out: 36 deploys and applies there
// take minutes; apply's kernel calls are deploy's, which the VM tests.

package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// edit is one change a user makes to a lab file, on its YAML as data; k
// makes its names and subnets its own.
type edit struct {
	name string
	fn   func(doc map[string]any, r *rand.Rand, k int) bool // false: not applicable to this lab
}

var edits = []edit{
	{"add a node", addNode}, {"add a link", addLink}, {"add an address", addAddress}, {"add a route", addRoute},
	{"add a rule", addRule}, {"add a firewall rule", addFirewall}, {"add a file", addFile}, {"change a daemon's config", changeDaemon},
}

// editLabs are the labs the edits start from.
var editLabs = []string{"client-router-server.yaml", "two-routers.yaml", "nat-router.yaml", "policy-routing.yaml", "pair.yaml", "switch.yaml"}

// TestPrivilegedApplyEqualsDeploy: for random edits of the examples and a
// routing lab, each applied both ways (the edit made, and taken back),
// `deploy A; apply B` builds what a fresh `deploy B` builds, compared
// object by object as the script-equivalence test compares (links,
// addresses, routes, rules, sysctls, queues, qdiscs, nftables, views),
// the routes the daemons learn aside.
func TestPrivilegedApplyEqualsDeploy(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	seed := uint64(os.Getpid())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 35))
	type pair struct{ name, a, b string }
	var cases []pair
	k := 1
	add := func(base string, e edit, n int) int {
		made := 0
		for ; made < n; k++ {
			doc := readDoc(t, base)
			if !e.fn(doc, r, k) {
				return made
			}
			a, b := marshal(t, readDoc(t, base)), marshal(t, doc)
			cases = append(cases, pair{fmt.Sprintf("%s/%s/%d", strings.TrimSuffix(base, ".yaml"), e.name, k), a, b},
				pair{fmt.Sprintf("%s/undo %s/%d", strings.TrimSuffix(base, ".yaml"), e.name, k), b, a})
			made++
		}
		return made
	}
	for _, e := range edits[:len(edits)-1] {
		// Two of each, from labs drawn at random that the edit fits.
		made := 0
		for _, i := range r.Perm(len(editLabs)) {
			if made += add(editLabs[i], e, 2-made); made == 2 {
				break
			}
		}
	}
	if _, err := exec.LookPath("vtysh"); err == nil {
		add("bgp-pair.yaml", edits[len(edits)-1], 1)
		add("bgp-pair.yaml", edits[0], 1)
	} else {
		t.Log("no FRR here: the routing lab's edits are left out")
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.a)
			f.deploy()
			lb := parseAs(t, f, c.b)
			res, err := f.m.Apply(context.Background(), lb)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			f.lab = lb
			got := withoutLearned(snapshot(t, f))
			if _, err := f.m.Destroy(lb.Name); err != nil {
				t.Fatal(err)
			}
			f.deploy()
			want := withoutLearned(snapshot(t, f))
			t.Logf("apply: %d taken back, %d made, rebuilt %v", res.Undone, res.Done, res.Rebuilt)
			diffSnapshots(t, want, got, "deploy B", "apply")
		})
	}
}

// TestPrivilegedApplyFailureTakesBack: an apply whose last step fails
// (after a new node, a node rebuilt for its changed exec line, a file
// and a route) leaves the lab as it was, object by object (the rebuilt
// node's view among them), and its state as before.
func TestPrivilegedApplyFailureTakesBack(t *testing.T) {
	a := readDoc(t, "two-routers.yaml")
	b := readDoc(t, "two-routers.yaml")
	m(m(a, "nodes"), "server")["exec"] = []any{"echo a"}
	m(m(b, "nodes"), "server")["exec"] = []any{"echo b"}
	addNode(b, rand.New(rand.NewPCG(1, 2)), 1)
	addFile(b, rand.New(rand.NewPCG(1, 2)), 2)
	addRoute(b, rand.New(rand.NewPCG(3, 4)), 3)
	f := newFixture(t, marshal(t, a))
	f.deploy()
	before := snapshot(t, f)
	stBefore, _ := f.m.loadState(f.lab.Name)
	lb := parseAs(t, f, marshal(t, b))
	plan, err := PlanApply(f.lab, lb, nil)
	if err != nil || !slices.Contains(plan.Rebuilt, "server") {
		t.Fatalf("plan: %v, rebuilt %v (want server)", err, plan.Rebuilt)
	}
	f.m.BeforeStep = func(_ context.Context, i int, _ Step) error {
		if i == len(plan.Do)-1 {
			return errors.New("the last step fails")
		}
		return nil
	}
	if _, err := f.m.Apply(context.Background(), lb); err == nil || !strings.Contains(err.Error(), "the lab is as it was") {
		t.Fatalf("apply with a failing last step: %v", err)
	}
	// A node made again has new ifindexes: the snapshot's veth peers,
	// found by ifindex, are then told apart where they were ambiguous.
	diffSnapshots(t, withoutPeers(before), withoutPeers(snapshot(t, f)), "before", "after the failed apply")
	st, _ := f.m.loadState(f.lab.Name)
	if st.Applying != nil || st.Source != stBefore.Source || len(st.Namespaces) != len(stBefore.Namespaces) {
		t.Errorf("state after the failed apply: applying %v, %d namespaces (had %d)", st.Applying, len(st.Namespaces), len(stBefore.Namespaces))
	}
	if left := nsOf(f, "x1"); left {
		t.Errorf("the new node's namespace is left")
	}
}

// nsOf reports whether node's namespace exists.
func nsOf(f *fixture, node string) bool {
	_, err := os.Stat(filepath.Join(f.m.netnsDir(), f.ns(node)))
	return err == nil
}

// parseAs parses lab text under the fixture's lab name.
func parseAs(t *testing.T, f *fixture, text string) *spec.Lab {
	t.Helper()
	data := labtest.Rename([]byte(text), f.lab.Name)
	l, err := spec.Parse(filepath.Join(t.TempDir(), f.lab.Name+".yaml"), data)
	if err != nil {
		t.Fatalf("edited lab: %v\n%s", err, data)
	}
	return l
}

// withoutLearned is a snapshot without the routes routing daemons
// learned (they come when the daemons converge, not with the deploy).
func withoutLearned(s map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range s {
		if strings.Contains(k, "/route/") && !strings.Contains(v, " proto=2 ") && !strings.Contains(v, " proto=3 ") && !strings.Contains(v, " proto=4 ") {
			continue
		}
		out[k] = v
	}
	return out
}

func readDoc(t *testing.T, example string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../examples", example))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "traffic") // runs name nodes an edit may take away
	delete(doc, "variants")
	return doc
}

func marshal(t *testing.T, doc map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// m is a mapping of the document, made when missing.
func m(parent map[string]any, key string) map[string]any {
	if v, ok := parent[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	parent[key] = v
	return v
}

// pickNode is a node of doc that has an interface with an IPv4 address on
// a link, and that interface.
func pickNode(doc map[string]any, r *rand.Rand) (string, string, bool) {
	var names []string
	for n := range m(doc, "nodes") {
		names = append(names, n)
	}
	sort.Strings(names)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names {
		ifaces := m(m(m(doc, "nodes"), n), "interfaces")
		var ifs []string
		for i, v := range ifaces {
			if s, ok := v.(map[string]any); ok && i != "lo" && s["addresses"] != nil && s["kind"] == nil {
				ifs = append(ifs, i)
			}
		}
		sort.Strings(ifs)
		if len(ifs) > 0 {
			return n, ifs[0], true
		}
	}
	return "", "", false
}

func addNode(doc map[string]any, r *rand.Rand, k int) bool {
	y, _, ok := pickNode(doc, r)
	if !ok {
		return false
	}
	nodes := m(doc, "nodes")
	x := fmt.Sprintf("x%d", k)
	nodes[x] = map[string]any{
		"interfaces": map[string]any{"e0": map[string]any{"addresses": []any{fmt.Sprintf("10.200.%d.1/24", k)}}},
		"routes":     []any{map[string]any{"to": "default", "via": fmt.Sprintf("10.200.%d.254", k)}},
	}
	m(m(nodes, y), "interfaces")[x] = map[string]any{"addresses": []any{fmt.Sprintf("10.200.%d.254/24", k)}}
	doc["links"] = append(doc["links"].([]any), map[string]any{"endpoints": []any{x + ":e0", y + ":" + x}})
	return true
}

func addLink(doc map[string]any, r *rand.Rand, k int) bool {
	y, _, ok1 := pickNode(doc, r)
	z, _, ok2 := pickNode(doc, r)
	if !ok1 || !ok2 || y == z {
		return ok1 && ok2 && addLink(doc, r, k)
	}
	nodes := m(doc, "nodes")
	name := fmt.Sprintf("l%d", k)
	m(m(nodes, y), "interfaces")[name] = map[string]any{"addresses": []any{fmt.Sprintf("10.201.%d.1/24", k)}}
	m(m(nodes, z), "interfaces")[name] = map[string]any{"addresses": []any{fmt.Sprintf("10.201.%d.2/24", k)}}
	doc["links"] = append(doc["links"].([]any), map[string]any{"endpoints": []any{y + ":" + name, z + ":" + name}})
	return true
}

func addAddress(doc map[string]any, r *rand.Rand, k int) bool {
	y, i, ok := pickNode(doc, r)
	if !ok {
		return false
	}
	ifc := m(m(m(m(doc, "nodes"), y), "interfaces"), i)
	ifc["addresses"] = append(ifc["addresses"].([]any), fmt.Sprintf("10.202.%d.1/24", k))
	return true
}

func addRoute(doc map[string]any, r *rand.Rand, k int) bool {
	y, i, ok := pickNode(doc, r)
	if !ok {
		return false
	}
	node := m(m(doc, "nodes"), y)
	routes, _ := node["routes"].([]any)
	node["routes"] = append(routes, map[string]any{"to": fmt.Sprintf("198.18.%d.0/24", k), "dev": i})
	return true
}

func addRule(doc map[string]any, r *rand.Rand, k int) bool {
	y, _, ok := pickNode(doc, r)
	if !ok {
		return false
	}
	node := m(m(doc, "nodes"), y)
	rules, _ := node["rules"].([]any)
	node["rules"] = append(rules, map[string]any{"from": fmt.Sprintf("10.203.%d.0/24", k), "table": 100 + k})
	return true
}

// addFirewall adds a rule to a router's firewall (a firewall filters
// what a node forwards).
func addFirewall(doc map[string]any, r *rand.Rand, k int) bool {
	var routers []string
	for n, v := range m(doc, "nodes") {
		if node, ok := v.(map[string]any); ok && node["forwarding"] == true {
			routers = append(routers, n)
		}
	}
	if len(routers) == 0 {
		return false
	}
	sort.Strings(routers)
	node := m(m(doc, "nodes"), routers[r.IntN(len(routers))])
	rule := map[string]any{"drop": map[string]any{"proto": "udp", "port": 9000 + k}}
	switch fw := node["firewall"].(type) {
	case nil:
		node["firewall"] = []any{rule}
	case []any:
		node["firewall"] = append([]any{rule}, fw...)
	case map[string]any:
		rules, _ := fw["rules"].([]any)
		fw["rules"] = append([]any{rule}, rules...)
	}
	return true
}

func addFile(doc map[string]any, r *rand.Rand, k int) bool {
	y, _, ok := pickNode(doc, r)
	if !ok {
		return false
	}
	m(m(m(doc, "nodes"), y), "files")[fmt.Sprintf("/etc/nslab-apply-%d", k)] = fmt.Sprintf("written by edit %d of {{.Name}}\n", k)
	return true
}

// changeDaemon changes a routing daemon's configuration: a comment in
// FRR's frr.conf or BIRD's bird.conf.
func changeDaemon(doc map[string]any, r *rand.Rand, k int) bool {
	for _, n := range []string{"r1", "r2"} {
		node := m(m(doc, "nodes"), n)
		for kind, comment := range map[string]string{"frr": "! edit %d\n", "bird": "# edit %d\n"} {
			if d, ok := node[kind].(map[string]any); ok && r.IntN(2) == 0 {
				d["config"] = d["config"].(string) + fmt.Sprintf(comment, k)
				return true
			}
		}
	}
	return changeDaemon(doc, r, k)
}

// TestPrivilegedApplyReloadsDaemons: a new frr.conf and bird.conf are
// taken by the running daemons (frr-reload.py, birdc configure): the same
// processes, the new configuration in them.
func TestPrivilegedApplyReloadsDaemons(t *testing.T) {
	if _, err := exec.LookPath("vtysh"); err != nil {
		t.Skip("no FRR here")
	}
	doc := readDoc(t, "bgp-pair.yaml")
	f := newFixture(t, marshal(t, doc))
	f.deploy()
	pids := func() []int {
		var out []int
		for pid := range markedWith(f.lab.Name + "/") {
			if tag := tagOf(pid); strings.HasSuffix(tag, "/frr") || strings.HasSuffix(tag, "/bird") {
				out = append(out, pid)
			}
		}
		slices.Sort(out)
		return out
	}
	before := pids()
	frr := m(m(m(doc, "nodes"), "r1"), "frr")
	frr["config"] = strings.Replace(frr["config"].(string), " no bgp ebgp-requires-policy\n", " no bgp ebgp-requires-policy\n timers bgp 2 6\n", 1)
	bird := m(m(m(doc, "nodes"), "r2"), "bird")
	bird["config"] = strings.Replace(bird["config"].(string), "scan time 10", "scan time 20", 1)
	lb := parseAs(t, f, marshal(t, doc))
	plan, err := PlanApply(f.lab, lb, nil)
	if err != nil || len(plan.Undo) != 0 || len(plan.Do) != 2 || !strings.HasPrefix(plan.Do[0].Name, "reload FRR in r1") || !strings.HasPrefix(plan.Do[1].Name, "reload BIRD in r2") {
		t.Fatalf("plan: %v %+v", err, plan)
	}
	if _, err := f.m.Apply(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	if after := pids(); len(before) < 4 || !slices.Equal(before, after) {
		t.Errorf("the daemons' processes changed: %v before, %v after", before, after)
	}
	f.lab = lb
	x, v := openNodeView(t, f, "r1")
	out, err := deployed.RunIn(context.Background(), x, v, "", "vtysh", "-c", "show running-config")
	if err != nil || !strings.Contains(string(out), "timers bgp 2 6") {
		t.Errorf("FRR in r1 runs without the new line: %v\n%s", err, out)
	}
	x, v = openNodeView(t, f, "r2")
	if out, err := deployed.RunIn(context.Background(), x, v, "", "cat", spec.BIRDConfPath); err != nil || !strings.Contains(string(out), "scan time 20") {
		t.Errorf("r2's bird.conf is not the new one: %v\n%s", err, out)
	}
}

// openNodeView opens node's namespace and view, closed with the test.
func openNodeView(t *testing.T, f *fixture, node string) (*ns.NS, *ns.View) {
	t.Helper()
	x, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	v, err := ns.OpenView(f.m.labViews(f.lab.Name), f.ns(node))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return x, v
}

// withoutPeers is a snapshot without the veth peers of its links.
func withoutPeers(s map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range s {
		if i := strings.Index(v, " peer="); i >= 0 && strings.Contains(k, "/link/") {
			v = v[:i]
		}
		out[k] = v
	}
	return out
}
