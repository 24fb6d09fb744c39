package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// base is a valid lab the rule cases start from.
const base = `name: t
nodes:
  a:
    interfaces:
      e0: {addresses: [10.0.1.1/24]}
  b:
    interfaces:
      e0: {addresses: [10.0.1.2/24]}
links:
  - endpoints: [a:e0, b:e0]
`

func TestParseValid(t *testing.T) {
	l, err := Parse("base.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != "t" || len(l.Nodes) != 2 || len(l.Links) != 1 {
		t.Fatalf("parsed %+v", l)
	}
	if got := l.Node("a").Interface("e0").Peer; got != (Endpoint{"b", "e0"}) {
		t.Errorf("peer of a:e0 = %v", got)
	}
}

func TestExamplesValidate(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) < 3 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, f := range files {
		if _, err := ReadFile(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestRules has one case per validation rule: the file, and the place and
// message of the problem it must produce.
func TestRules(t *testing.T) {
	cases := ruleCases
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantProblem(t, c.yaml, c.where, c.msg) })
	}
}

var ruleCases = []struct {
	name, yaml string
	where      string // file:line:col: path
	msg        string // part of the message
}{
	{"unknown top key", base + "colour: red\n", "x.yaml:11:1: colour", "unknown key"},
	{"unknown key suggestion", strings.Replace(base, "  a:\n    interfaces:", "  a:\n    interface:", 1), "x.yaml:4:5: nodes.a.interface", `did you mean "interfaces"`},
	{"wrong type mtu", strings.Replace(base, "10.0.1.1/24]}", "10.0.1.1/24], mtu: \"1500\"}", 1), "x.yaml:5:43: nodes.a.interfaces.e0.mtu", "must be an integer"},
	{"wrong type addresses", strings.Replace(base, "[10.0.1.1/24]", "10.0.1.1/24", 1), "x.yaml:5:23: nodes.a.interfaces.e0.addresses", "must be a list"},
	{"wrong type nodes", "name: t\nnodes: [a, b]\n", "x.yaml:2:8: nodes", "must be a mapping"},
	{"duplicate key", base + "name: u\n", "x.yaml:11:1", `duplicate key "name" (first at line 1)`},
	{"duplicate node", base + "nodes: {}\n", "x.yaml:11:1", `duplicate key "nodes"`},
	{"missing name", strings.Replace(base, "name: t\n", "", 1), "x.yaml:1:1: name", "missing"},
	{"lab name chars", strings.Replace(base, "name: t", "name: Lab_1", 1), "x.yaml:1:7: name", "lowercase"},
	{"lab name length", strings.Replace(base, "name: t", "name: abcdefghijklm", 1), "x.yaml:1:7: name", "at most 12"},
	{"interface name length", strings.Replace(base, "      e0: {addresses: [10.0.1.1/24]}", "      abcdefghijklmnop: {}", 1), "x.yaml:5:7: nodes.a.interfaces.abcdefghijklmnop", "at most 15"},
	{"interface name chars", strings.Replace(base, "      e0: {addresses: [10.0.1.1/24]}", "      \"a;rm\": {}", 1), "x.yaml:5:7: nodes.a.interfaces.a;rm", "letters, digits"},
	{"namespace escape dotdot", strings.Replace(base, "links:", "  \"..\": {}\nlinks:", 1), "x.yaml:9:3: nodes...", "node name"},
	{"namespace escape slash", strings.Replace(base, "  b:\n", "  a/b:\n", 1), "x.yaml:6:3: nodes.a/b", "node name"},
	{"undefined node in link", strings.Replace(base, "[a:e0, b:e0]", "[a:e0, c:e0]", 1), "x.yaml:10:23: links[0].endpoints[1]", `node "c" is not defined`},
	{"declared interface a link misspells", strings.Replace(base, "[a:e0, b:e0]", "[a:e0, b:e9]", 1), "x.yaml:8:7: nodes.b.interfaces.e0", `on no link (did you mean "e9", which a link names?)`},
	{"undeclared linked interface name", strings.Replace(base, "[a:e0, b:e0]", "[a:e0, b:abcdefghijklmnop]", 1), "x.yaml:10:23: links[0].endpoints[1]", "at most 15"},
	{"linked bridge", strings.Replace(base, "    interfaces:\n      e0: {addresses: [10.0.1.2/24]}", "    bridges: {e0: {}}", 1), "x.yaml:9:23: links[0].endpoints[1]", "b:e0 is a bridge"},
	{"interface on two links", base + "  - endpoints: [a:e0, b:e0]\n", "x.yaml:11:17: links[1].endpoints[0]", "already used by links[0]"},
	{"endpoint format", strings.Replace(base, "[a:e0, b:e0]", "[a-e0, b:e0]", 1), "x.yaml:10:17: links[0].endpoints[0]", "must be node:interface"},
	{"three endpoints", strings.Replace(base, "[a:e0, b:e0]", "[a:e0, b:e0, a:e0]", 1), "x.yaml:10:16: links[0].endpoints", "exactly 2"},
	{"interface on no link", strings.Replace(base, "links:\n  - endpoints: [a:e0, b:e0]\n", "", 1), "x.yaml:5:7: nodes.a.interfaces.e0", "on no link"},
	{"duplicate address", strings.Replace(base, "10.0.1.2/24", "10.0.1.1/24", 1), "x.yaml:8:24: nodes.b.interfaces.e0.addresses[0]", "already assigned at nodes.a.interfaces.e0.addresses[0]"},
	{"invalid cidr", strings.Replace(base, "10.0.1.2/24", "10.0.1.2/33", 1), "x.yaml:8:24: nodes.b.interfaces.e0.addresses[0]", "invalid address"},
	{"address without length", strings.Replace(base, "10.0.1.2/24", "10.0.1.2", 1), "x.yaml:8:24: nodes.b.interfaces.e0.addresses[0]", "add the prefix length"},
	{"network address", strings.Replace(base, "10.0.1.2/24", "10.0.1.0/24", 1), "x.yaml:8:24: nodes.b.interfaces.e0.addresses[0]", "network or broadcast"},
	{"invalid mac", strings.Replace(base, "10.0.1.2/24]}", "10.0.1.2/24], mac: \"zz\"}", 1), "x.yaml:8:43: nodes.b.interfaces.e0.mac", "invalid MAC"},
	{"multicast mac", strings.Replace(base, "10.0.1.2/24]}", "10.0.1.2/24], mac: \"01:00:00:00:00:01\"}", 1), "x.yaml:8:43: nodes.b.interfaces.e0.mac", "multicast"},
	{"duplicate mac", strings.Replace(strings.Replace(base, "10.0.1.2/24]}", "10.0.1.2/24], mac: \"02:00:00:00:00:01\"}", 1), "10.0.1.1/24]}", "10.0.1.1/24], mac: \"02:00:00:00:00:01\"}", 1), "x.yaml:8:43: nodes.b.interfaces.e0.mac", "already used at nodes.a.interfaces.e0.mac"},
	{"mtu range", strings.Replace(base, "10.0.1.2/24]}", "10.0.1.2/24], mtu: 10}", 1), "x.yaml:8:43: nodes.b.interfaces.e0.mtu", "between 68 and 65535"},
	{"ipv6 mtu", strings.Replace(base, "10.0.1.2/24]}", "\"fd00::2/64\"], mtu: 1000}", 1), "x.yaml:8:44: nodes.b.interfaces.e0.mtu", "below 1280"},
	{"gateway not connected", strings.Replace(base, "  b:\n", "  b:\n    routes: [{to: default, via: 10.0.9.1}]\n", 1), "x.yaml:7:33: nodes.b.routes[0].via", "not on any connected subnet of node b"},
	{"route host bits", strings.Replace(base, "  b:\n", "  b:\n    routes: [{to: 10.0.9.1/24, via: 10.0.1.1}]\n", 1), "x.yaml:7:19: nodes.b.routes[0].to", "did you mean 10.0.9.0/24"},
	{"route family mix", strings.Replace(base, "  b:\n", "  b:\n    routes: [{to: \"fd00::/8\", via: 10.0.1.1}]\n", 1), "x.yaml:7:36: nodes.b.routes[0].via", "different IP versions"},
	{"route unknown dev", strings.Replace(base, "  b:\n", "  b:\n    routes: [{to: 10.0.9.0/24, dev: e7}]\n", 1), "x.yaml:7:37: nodes.b.routes[0].dev", `device "e7" is not an interface`},
	{"route needs via or dev", strings.Replace(base, "  b:\n", "  b:\n    routes: [{to: 10.0.9.0/24}]\n", 1), "x.yaml:7:14: nodes.b.routes[0]", "needs via"},
	{"route duplicate", strings.Replace(base, "  b:\n", "  b:\n    routes: [{to: default, via: 10.0.1.1}, {to: default, via: 10.0.1.1}]\n", 1), "x.yaml:7:44: nodes.b.routes[1]", "already defined"},
	{"bridge port not interface", strings.Replace(base, "  b:\n", "  b:\n    bridges: {br0: {ports: [p9]}}\n", 1), "x.yaml:7:29: nodes.b.bridges.br0.ports[0]", `port "p9" is on no link of node b`},
	{"bridge name clash", strings.Replace(base, "  b:\n", "  b:\n    bridges: {e0: {}}\n", 1), "x.yaml:7:15: nodes.b.bridges.e0", "has the name of"},
	{"non-net sysctl", strings.Replace(base, "  b:\n", "  b:\n    sysctls: {kernel.panic: 1}\n", 1), "x.yaml:7:15: nodes.b.sysctls[\"kernel.panic\"]", "only namespace-scoped net.*"},
	{"global net sysctl", strings.Replace(base, "  b:\n", "  b:\n    sysctls: {net.core.netdev_max_backlog: 1}\n", 1), "x.yaml:7:15: nodes.b.sysctls[\"net.core.netdev_max_backlog\"]", "not per namespace"},
	{"sysctl escape", strings.Replace(base, "  b:\n", "  b:\n    sysctls: {\"net.//.//.x\": 1}\n", 1), "x.yaml:7:15: nodes.b.sysctls[\"net.//.//.x\"]", "dotted names"},
	{"forwarding type", strings.Replace(base, "  b:\n", "  b:\n    forwarding: yes please\n", 1), "x.yaml:7:17: nodes.b.forwarding", "must be true, false or {ipv4"},
	{"expect unknown node", base + "expect: {reachable: [\"c -> a\"]}\n", "x.yaml:11:22: expect.reachable[0]", "c is no node of the lab"},
	{"expect source of every node", base + "expect: {reachable: [\"*:lo -> a\"]}\n", "x.yaml:11:22: expect.reachable[0]", "names one node and one of its interfaces"},
	{"expect unknown source", base + "expect: {reachable: [\"b:e9 -> a\"]}\n", "x.yaml:11:22: expect.reachable[0]", "e9 is no interface of b"},
	{"expect unknown target", base + "expect: {unreachable: [\"b:lo -> a:e9\"]}\n", "x.yaml:11:24: expect.unreachable[0]", "e9 is no interface of a"},
	{"alias bomb", "name: t\na: &a [x, x]\nb: &b [*a, *a]\nnodes: {}\n", "x.yaml:3:8", "aliases are refused"},
	{"yaml syntax", "name: t\nnodes:\n  a: b\n c: d\n", "x.yaml:4:2", "YAML syntax: indented 1 space, like no key above it (0, 2)"},
	{"two documents", base + "---\nname: u\n", "x.yaml:11:1", "second YAML document"},
	{"empty file", "", "x.yaml: ", "file is empty"},
	{"oversize file", base + "#" + strings.Repeat("x", MaxFileSize) + "\n", "x.yaml: ", "at most 67108864 bytes"},
}

// TestAllProblemsAtOnce checks that one file with many mistakes gets all of
// them reported in one round, in file order.
func TestAllProblemsAtOnce(t *testing.T) {
	data, err := os.ReadFile("testdata/many-problems.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("many-problems.yaml", data)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	if len(ps) < 10 {
		t.Fatalf("want at least 10 problems, got %d:\n%v", len(ps), err)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].Line < ps[i-1].Line {
			t.Errorf("problems out of order: %v before %v", ps[i-1], ps[i])
		}
	}
}

func TestSysctlProcPath(t *testing.T) {
	s := Sysctl{Key: "net.ipv4.conf.eth0/10.rp_filter"}
	if got, want := s.ProcPath(), "/proc/sys/net/ipv4/conf/eth0.10/rp_filter"; got != want {
		t.Errorf("ProcPath = %s, want %s", got, want)
	}
}

func TestDefaultRouteFamily(t *testing.T) {
	y := strings.Replace(base, "10.0.1.1/24]}", "10.0.1.1/24, \"fd00::1/64\"]}", 1)
	y = strings.Replace(y, "10.0.1.2/24]}", "10.0.1.2/24, \"fd00::2/64\"]}", 1)
	y = strings.Replace(y, "  b:\n", "  b:\n    routes: [{to: default, via: 10.0.1.1}, {to: default, via: \"fd00::1\"}, {to: 10.9.0.0/16, dev: e0, metric: 7}]\n", 1)
	l, err := Parse("x.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	rs := l.Node("b").Routes
	if rs[0].To.String() != "0.0.0.0/0" || rs[1].To.String() != "::/0" || rs[2].Dev != "e0" || rs[2].Metric != 7 {
		t.Errorf("routes: %v %v %v", rs[0], rs[1], rs[2])
	}
}

func TestSysctlInterface(t *testing.T) {
	for key, want := range map[string]string{
		"net.ipv4.conf.eth0.rp_filter":                "eth0",
		"net.ipv4.conf.all.rp_filter":                 "",
		"net.ipv6.conf.default.forwarding":            "",
		"net.ipv6.neigh.veth1.base_reachable_time_ms": "veth1",
		"net.ipv4.conf.eth0/10.rp_filter":             "eth0.10",
		"net.ipv4.ip_forward":                         "",
	} {
		if got := (Sysctl{Key: key}).Interface(); got != want {
			t.Errorf("%s: Interface() = %q, want %q", key, got, want)
		}
	}
}

// sriovBase is the valid SR-IOV lab the SR-IOV rule cases edit.
const sriovBase = `name: s
sriov:
  - pf: ens4f0np0
    numvfs: 2
    vfs:
      - {index: 0, node: a, name: vf0}
      - {index: 1, node: b, name: vf1}
nodes:
  a: {interfaces: {vf0: {addresses: [10.0.0.1/24]}}}
  b: {}
`

func TestSRIOVRules(t *testing.T) {
	base := sriovBase
	if _, err := Parse("s.yaml", []byte(base)); err != nil {
		t.Fatalf("valid: %v", err)
	}
	cases := sriovCases
	for _, c := range cases {
		y := strings.Replace(base, c.from, c.to, 1)
		if y == base {
			t.Fatalf("edit %q did not apply", c.from)
		}
		_, err := Parse("s.yaml", []byte(y))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("want %q, got %v", c.msg, err)
		}
	}
	l, _ := Parse("s.yaml", []byte(base))
	if i := l.Node("b").Interface("vf1"); i == nil || i.Kind != KindVF {
		t.Errorf("undeclared VF interface not added to its node")
	}
	linked := strings.Replace(base, "b: {}", "b: {interfaces: {vf1: {}}}\n  c: {interfaces: {e0: {}}}\nlinks: [{endpoints: [b:vf1, c:e0]}]", 1)
	if _, err := Parse("s.yaml", []byte(linked)); err == nil || !strings.Contains(err.Error(), "is a veth end of a link") {
		t.Errorf("VF named like a link end: %v", err)
	}
}

var sriovCases = []struct{ from, to, msg string }{
	{"index: 1, node: b", "index: 0, node: b", "VF 0 of ens4f0np0 is already handed out"},
	{"index: 1, node: b", "index: 2, node: b", "beyond numvfs 2"},
	{"index: 1, node: b", "index: 1, node: c", `node "c" is not defined`},
	{"node: b, name: vf1", "node: a, name: vf0", "a:vf0 is already the name of"},
	{"numvfs: 2", "numvfs: 0", "the number of VFs must be between 1"},
	{"name: vf1}", "name: vf1, vlan: 5000}", "VLAN id"},
	{"name: vf1}", "name: vf1, link_state: up}", "link_state \"up\""},
	{"name: vf1}", "name: vf1, min_tx_rate: 10, max_tx_rate: 5}", "min_tx_rate 10 is above"},
}

// placed is a valid lab with CPU placement and queues, for the placement
// rules.
const placed = `name: t
nodes:
  a:
    cpus: [0]
    interfaces:
      e0: {addresses: [10.0.1.1/24], queues: 2}
  b:
    cpus: "1-3"
    receive: napi
    interfaces:
      e0: {addresses: [10.0.1.2/24]}
links:
  - endpoints: [a:e0, b:e0]
traffic:
  - {name: t, from: a:e0, to: 10.0.1.2, count: 10, cpus: [0, 1]}
`

// TestPlacementRules has one case per rule of the placement keys (node
// cpus and receive, interface queues, traffic cpus), with its place.
func TestPlacementRules(t *testing.T) {
	l, err := Parse("x.yaml", []byte(placed))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Node("b").CPUs.String(); got != "1-3" || l.Node("b").Receive != ReceiveNAPI || l.Node("a").Interface("e0").Queues != 2 ||
		l.Traffic[0].Threads != 2 || l.Traffic[0].CPUs.String() != "0-1" {
		t.Fatalf("parsed b cpus %s receive %q, a:e0 queues %d, traffic threads %d cpus %s", got, l.Node("b").Receive,
			l.Node("a").Interface("e0").Queues, l.Traffic[0].Threads, l.Traffic[0].CPUs)
	}
	cases := placementCases
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { problemAfterEdit(t, placed, c.from, c.to, c.where, c.msg) })
	}
}

var placementCases = []struct {
	name, from, to string
	where, msg     string
}{
	{"cpu list syntax", `cpus: "1-3"`, `cpus: "3-1"`, "x.yaml:8:11: nodes.b.cpus", "smallest first"},
	{"cpu list words", `cpus: "1-3"`, `cpus: "all"`, "x.yaml:8:11: nodes.b.cpus", "CPU list \"all\""},
	{"cpu type", `cpus: [0]`, `cpus: true`, "x.yaml:4:11: nodes.a.cpus", "must be CPU numbers"},
	{"cpu negative", `cpus: [0]`, `cpus: [-1]`, "x.yaml:4:12: nodes.a.cpus[0]", "between 0 and 8191"},
	{"cpu too large", `cpus: [0]`, `cpus: [9000]`, "x.yaml:4:12: nodes.a.cpus[0]", "between 0 and 8191"},
	{"cpu empty list", `cpus: [0]`, `cpus: []`, "x.yaml:4:11: nodes.a.cpus", "places nothing"},
	{"receive value", "receive: napi", "receive: poll", "x.yaml:9:14: nodes.b.receive", `receive "poll"`},
	{"receive without cpus", "    cpus: [0]\n", "    receive: rps\n", "x.yaml:4:14: nodes.a.receive", "give cpus: too"},
	{"cpus without interfaces", "links:\n", "  c:\n    cpus: [0]\nlinks:\n", "x.yaml:13:11: nodes.c.cpus", "no interface"},
	{"queues range", "queues: 2", "queues: 0", "x.yaml:6:46: nodes.a.interfaces.e0.queues", "between 1 and 256"},
	{"queues type", "queues: 2", "queues: many", "x.yaml:6:46: nodes.a.interfaces.e0.queues", "must be an integer"},
	{"queues on lo", "      e0: {addresses: [10.0.1.2/24]}\n", "      e0: {addresses: [10.0.1.2/24]}\n      lo: {queues: 2}\n", "x.yaml:12:20: nodes.b.interfaces.lo.queues", "lo has no queues"},
	{"traffic cpus and threads", "cpus: [0, 1]}", "cpus: [0, 1], threads: 3}", "x.yaml:15:58: traffic[0].cpus", "threads is 3"},
	{"traffic cpus syntax", "cpus: [0, 1]}", "cpus: \"0-\"}", "x.yaml:15:58: traffic[0].cpus", "CPU list"},
}

func TestCPUSets(t *testing.T) {
	for in, want := range map[string]struct{ list, mask string }{
		"1": {"1", "2"}, "0-3": {"0-3", "f"}, "0,2-3": {"0,2-3", "d"}, "3,1": {"1,3", "a"}, "32": {"32", "1,00000000"}, "0,33": {"0,33", "2,00000001"},
	} {
		set, err := ParseCPUList(in)
		if err != nil || set.String() != want.list || set.Mask() != want.mask {
			t.Errorf("%q: %v %q %q %v", in, set, set.String(), set.Mask(), err)
		}
		back, err := ParseCPUMask(set.Mask())
		if err != nil || back.String() != set.String() {
			t.Errorf("mask %q read back as %v %v", set.Mask(), back, err)
		}
	}
	for _, bad := range []string{"", "a", "2-1", "-1", "1-", "9000"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// problemAfterEdit parses src with from replaced by to and requires a
// problem at where (file:line:col: path) whose message holds msg.
func problemAfterEdit(t *testing.T, src, from, to, where, msg string) {
	t.Helper()
	y := strings.Replace(src, from, to, 1)
	if y == src {
		t.Fatalf("edit %q did not apply", from)
	}
	wantProblem(t, y, where, msg)
}

// wantProblem parses yml as x.yaml and wants a problem at where (file:line:col:
// path) whose message contains msg.
func wantProblem(t *testing.T, yml, where, msg string) {
	t.Helper()
	_, err := Parse("x.yaml", []byte(yml))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	for _, p := range ps {
		if s := p.Error(); strings.HasPrefix(s, where) && strings.Contains(s, msg) {
			return
		}
	}
	t.Errorf("no problem at %q containing %q; got:\n%v", where, msg, err)
}

// TestFastPathRules: fastpath: xdp is for a forwarding node whose
// interfaces neither impair nor queue (a redirect skips the qdisc), and
// names no other fast path.
func TestFastPathRules(t *testing.T) {
	base := "name: f\nnodes:\n  r:\n    forwarding: %s\n    interfaces:\n      e0: {addresses: [10.0.0.1/24]%s}\n  h:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [r:e0, h:e0]\n"
	for _, c := range []struct{ fw, ifc, want string }{
		{"{ipv4: true, fastpath: xdp}", "", ""},
		{"{ipv4: true, fastpath: dpdk}", "", `fastpath "dpdk": use xdp`},
		{"{ipv4: false, fastpath: xdp}", "", "add ipv4: true or ipv6: true"},
		{"{ipv4: true, fastpath: xdp}", ", impair: {rate: 10Mbit}", "past an interface's qdisc"},
	} {
		_, err := Parse("f.yaml", []byte(fmt.Sprintf(base, c.fw, c.ifc)))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("forwarding %s%s: %v, want %q", c.fw, c.ifc, err, c.want)
		}
	}
}

// TestMachineSysctls: machine: takes the machine-wide keys only, and a
// node's sysctls: naming one points there.
func TestMachineSysctls(t *testing.T) {
	src := "name: m\n%snodes:\n  a:\n%s    interfaces:\n      e0: {addresses: [10.0.0.1/24]}\n  b:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [a:e0, b:e0]\n"
	l, err := Parse("m.yaml", []byte(fmt.Sprintf(src, "machine:\n  sysctls: {net.core.netdev_budget: 600}\n", "")))
	if err != nil || len(l.Machine) != 1 || l.Machine[0].Value != "600" {
		t.Fatalf("machine sysctls: %+v, %v", l, err)
	}
	if _, err := Parse("m.yaml", []byte(fmt.Sprintf(src, "machine:\n  sysctls: {net.ipv4.ip_forward: 1}\n", ""))); err == nil || !strings.Contains(err.Error(), "goes under a node's sysctls") {
		t.Errorf("a per-namespace key under machine: %v", err)
	}
	if _, err := Parse("m.yaml", []byte(fmt.Sprintf(src, "", "    sysctls: {net.core.netdev_budget: 600}\n"))); err == nil || !strings.Contains(err.Error(), "give it under machine: {sysctls: {net.core.netdev_budget: 600}}") {
		t.Errorf("a machine-wide key in a node: %v", err)
	}
}

// TestFlowtableRules: flowtable: is true or false, for a node that
// forwards, refused at its line and column otherwise; a variant may turn
// it on.
func TestFlowtableRules(t *testing.T) {
	base := "name: f\nnodes:\n  r:\n    forwarding: %s\n    flowtable: %s\n    interfaces:\n      e0: {addresses: [10.0.0.1/24]}\n  h:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [r:e0, h:e0]\n"
	for _, c := range []struct{ fw, ft, want string }{
		{"true", "true", ""},
		{"false", "true", "f.yaml:5:16: nodes.r.flowtable: a flowtable speeds up what r forwards, and it forwards nothing"},
		{"true", "yes", "f.yaml:5:16: nodes.r.flowtable: must be true or false"},
	} {
		l, err := Parse("f.yaml", []byte(fmt.Sprintf(base, c.fw, c.ft)))
		if c.want == "" && (err != nil || !l.Node("r").Flowtable) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("forwarding %s, flowtable %s: %v, want %q", c.fw, c.ft, err, c.want)
		}
	}
	l, err := Parse("f.yaml", []byte(fmt.Sprintf(base, "true", "false")+"variants:\n  ft:\n    r: {flowtable: true}\n"))
	if err != nil || l.Node("r").Flowtable || !l.Variant("ft").Lab.Node("r").Flowtable {
		t.Errorf("a variant turning the flowtable on: %v", err)
	}
}

// TestMachineVariant: a variant's machine: {sysctls} merges over the
// lab's machine-wide settings; a per-namespace key there is refused at
// its place, and so is machine: in a lab with a node of that name.
func TestMachineVariant(t *testing.T) {
	src := "name: m\nmachine:\n  sysctls: {net.core.netdev_budget: 600}\nnodes:\n  %s:\n    interfaces:\n      e0: {addresses: [10.0.0.1/24]}\n  b:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [%s:e0, b:e0]\nvariants:\n  busy:\n    machine:\n      sysctls: {%s}\n"
	l, err := Parse("m.yaml", []byte(fmt.Sprintf(src, "a", "a", "net.core.netdev_budget: 300, net.core.dev_weight: 128")))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range l.Variant("busy").Lab.Machine {
		got[s.Key] = s.Value
	}
	if len(got) != 2 || got["net.core.netdev_budget"] != "300" || got["net.core.dev_weight"] != "128" || l.Machine[0].Value != "600" {
		t.Errorf("variant's machine sysctls %v (the lab's %v)", got, l.Machine)
	}
	if _, err := Parse("m.yaml", []byte(fmt.Sprintf(src, "a", "a", "net.ipv4.ip_forward: 1"))); err == nil || !strings.Contains(err.Error(), "m.yaml:16:") || !strings.Contains(err.Error(), "in variant busy") {
		t.Errorf("a per-namespace key in a variant's machine: %v", err)
	}
	if _, err := Parse("m.yaml", []byte(fmt.Sprintf(src, "machine", "machine", "net.core.dev_weight: 128"))); err == nil || !strings.Contains(err.Error(), "m.yaml:15:5: variants.busy.machine: in a variant, machine: is the machine-wide settings") {
		t.Errorf("machine: in a lab with a node named machine: %v", err)
	}
}
