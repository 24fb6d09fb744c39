package spec

import (
	"strings"
	"testing"
)

// kbase is a valid lab with a lab interface to make kinds over (a:e0) and
// two more for bonds and VRFs (a:e1, a:e2).
const kbase = `name: t
nodes:
  a:
    interfaces:
      e0: {}
  b:
    interfaces:
      e0: {addresses: [10.0.1.2/24]}
links:
  - endpoints: [a:e0, b:e0]
  - endpoints: [a:e1, b:e1]
  - endpoints: [a:e2, b:e2]
`

// withIf adds an interface entry to node a of kbase.
func withIf(entry string) string {
	return strings.Replace(kbase, "      e0: {}\n", "      e0: {}\n      "+entry+"\n", 1)
}

// withA adds lines under node a of kbase.
func withA(lines string) string {
	return strings.Replace(kbase, "  a:\n", "  a:\n"+lines, 1)
}

// kindCases are the validation cases of the link kinds, rules and tables:
// where each problem is reported and what it says.
var kindCases = []struct {
	name, yaml string
	where      string // file:line:col: path
	msg        string
}{
	{"macvlan without parent", withIf("m1: {macvlan: {mode: bridge}}"), "x.yaml:6:21: nodes.a.interfaces.m1.macvlan", "missing parent"},
	{"macvlan mode", withIf("m1: {macvlan: {parent: e0, mode: bridged}}"), "x.yaml:6:40: nodes.a.interfaces.m1.macvlan.mode", `did you mean "bridge"`},
	{"macvlan unknown parent", withIf("m1: {macvlan: {parent: e9}}"), "x.yaml:6:21: nodes.a.interfaces.m1.macvlan", "a:e9 is no interface of node a"},
	{"macvlan over lo", withIf("m1: {macvlan: {parent: lo}}"), "x.yaml:6:21: nodes.a.interfaces.m1.macvlan", "cannot be made over lo"},
	{"macvlan over itself", withIf("m1: {macvlan: {parent: m1}}"), "x.yaml:6:21: nodes.a.interfaces.m1.macvlan", "over itself"},
	{"two kinds", withIf("m1: {macvlan: {parent: e0}, vlan: {parent: e0, id: 5}}"), "x.yaml:6:7: nodes.a.interfaces.m1", "has macvlan and vlan"},
	{"kind on lo", withIf("lo: {vlan: {parent: e0, id: 5}}"), "x.yaml:6:18: nodes.a.interfaces.lo.vlan", "lo is the node's loopback"},
	{"vlan id range", withIf("v5: {vlan: {parent: e0, id: 4095}}"), "x.yaml:6:35: nodes.a.interfaces.v5.vlan.id", "between 1 and 4094"},
	{"vlan without id", withIf("v5: {vlan: {parent: e0}}"), "x.yaml:6:18: nodes.a.interfaces.v5.vlan", "missing id"},
	{"made kind on a link", withIf("v5: {vlan: {parent: e0, id: 5}}") + "  - endpoints: [a:v5, b:v5]\n", "x.yaml:6:7: nodes.a.interfaces.v5", "cannot also be a link endpoint"},
	{"made kind queues", withIf("v5: {vlan: {parent: e0, id: 5}, queues: 2}"), "x.yaml:6:47: nodes.a.interfaces.v5.queues", "no queues of its own"},
	{"bond mode", withIf("bd: {bond: {ports: [e1, e2], mode: active-standby}}"), "x.yaml:6:42: nodes.a.interfaces.bd.bond.mode", "is not one of balance-rr, active-backup"},
	{"bond without ports", withIf("bd: {bond: {mode: active-backup}}"), "x.yaml:6:18: nodes.a.interfaces.bd.bond", "missing ports"},
	{"bond port with addresses", strings.Replace(withIf("bd: {bond: {ports: [e0]}}"), "e0: {}", "e0: {addresses: [10.0.1.1/24]}", 1), "x.yaml:6:18: nodes.a.interfaces.bd.bond", "e0 has addresses: a bond's port carries no IP"},
	{"port of two masters", withIf("bd: {bond: {ports: [e1]}}\n      red: {vrf: {table: 10, ports: [e1]}}"), "x.yaml:7:18: nodes.a.interfaces.red.vrf", "e1 is already a port of bond bd"},
	{"vrf without table", withIf("red: {vrf: {ports: [e1]}}"), "x.yaml:6:18: nodes.a.interfaces.red.vrf", "missing table"},
	{"vrf table range", withIf("red: {vrf: {table: 0, ports: [e1]}}"), "x.yaml:6:26: nodes.a.interfaces.red.vrf.table", "must be between 1 and 4294967295, not 0"},
	{"vrf main table", withIf("red: {vrf: {table: main, ports: [e1]}}"), "x.yaml:6:26: nodes.a.interfaces.red.vrf.table", "one of the kernel's own"},
	{"vlans empty", strings.Replace(kbase, "  b:\n", "  b:\n    bridges: {br0: {ports: [e1, e2], vlan_filtering: true, vlans: {e1: []}}}\n", 1), "x.yaml:7:68: nodes.b.bridges.br0.vlans.e1", "in no VLAN"},
	{"vrf with addresses", withIf("red: {vrf: {table: 10, ports: [e1]}, addresses: [10.9.0.1/24]}"), "x.yaml:6:7: nodes.a.interfaces.red", "carries no traffic of its own"},
	{"made over each other", withIf("v5: {vlan: {parent: v6, id: 5}}\n      v6: {vlan: {parent: v5, id: 6}}"), "x.yaml:6:7: nodes.a.interfaces.v5", "in a ring: v5 -> v6 -> v5"},
	{"rule without table", withA("    rules: [{from: 10.0.2.0/24}]\n"), "x.yaml:4:13: nodes.a.rules[0]", "missing table"},
	{"rule prefix host bits", withA("    rules: [{from: 10.0.2.1/24, table: 100}]\n"), "x.yaml:4:20: nodes.a.rules[0].from", "did you mean 10.0.2.0/24"},
	{"rule unknown iif", withA("    rules: [{iif: e7, table: 100}]\n"), "x.yaml:4:19: nodes.a.rules[0].iif", "a:e7 is no interface of node a"},
	{"rule families", withA("    rules: [{from: 10.0.2.0/24, to: \"fd00::/8\", table: 100}]\n"), "x.yaml:4:13: nodes.a.rules[0]", "different IP versions"},
	{"rule unknown key", withA("    rules: [{src: 10.0.2.0/24, table: 100}]\n"), "x.yaml:4:14: nodes.a.rules[0].src", "unknown key; a rule takes: from, to"},
	{"rule table word", withA("    rules: [{to: 10.0.2.0/24, table: bogus}]\n"), "x.yaml:4:38: nodes.a.rules[0].table", "a number, or main, default or local"},
	{"route table", strings.Replace(kbase, "      e0: {addresses: [10.0.1.2/24]}\n", "      e0: {addresses: [10.0.1.2/24]}\n    routes: [{to: default, via: 10.0.1.1, table: -1}]\n", 1), "x.yaml:9:50: nodes.b.routes[0].table", "must be between 1 and 4294967295"},
	{"vlans without filtering", strings.Replace(kbase, "  b:\n", "  b:\n    bridges: {br0: {ports: [e1, e2], vlans: {e1: [10]}}}\n", 1), "x.yaml:7:45: nodes.b.bridges.br0.vlans", "vlan_filtering: true"},
	{"vlans of no port", strings.Replace(kbase, "  b:\n", "  b:\n    bridges: {br0: {ports: [e1, e2], vlan_filtering: true, vlans: {e3: [10]}}}\n", 1), "x.yaml:7:68: nodes.b.bridges.br0.vlans.e3", "not a port of bridge br0"},
	{"vlans shape", strings.Replace(kbase, "  b:\n", "  b:\n    bridges: {br0: {ports: [e1, e2], vlan_filtering: true, vlans: {e1: 10}}}\n", 1), "x.yaml:7:68: nodes.b.bridges.br0.vlans.e1", "want the port's tagged VLANs"},
	{"vlans pvid range", strings.Replace(kbase, "  b:\n", "  b:\n    bridges: {br0: {ports: [e1, e2], vlan_filtering: true, vlans: {e1: {pvid: 5000}}}}\n", 1), "x.yaml:7:79: nodes.b.bridges.br0.vlans.e1.pvid", "between 1 and 4094"},
}

// TestKindRules checks each kind case's problem, at its file:line:col.
func TestKindRules(t *testing.T) {
	for _, c := range kindCases {
		t.Run(c.name, func(t *testing.T) { wantProblem(t, c.yaml, c.where, c.msg) })
	}
}
