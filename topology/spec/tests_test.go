package spec

import (
	"strings"
	"testing"
	"time"
)

const testsLab = `name: tt
nodes:
  a: {interfaces: {e0: {addresses: [10.0.0.1/24]}}}
  b:
    interfaces: {e0: {addresses: [10.0.0.2/24]}}
    frr: {daemons: [bgpd], config: "router bgp 1\n"}
links:
  - endpoints: [a:e0, b:e0]
traffic:
  - {name: ab, from: a:e0, to: 10.0.0.2, count: 1000}
tests:
`

// TestTestsParse: each kind of test is read with its fields, its
// defaults and its common keys.
func TestTestsParse(t *testing.T) {
	l, err := Parse("t.yaml", []byte(testsLab+`  - reachable: a -> b:e0
  - unreachable: a:e0 -> 10.9.0.0/24
  - route: {node: a, to: default, via: 10.0.0.2, dev: e0, table: 100, protocol: static}
  - bgp: {node: b, neighbor: 10.0.0.1, prefixes: 2}
    wait: 30s
    points: 3
  - ospf6: {node: b, neighbor: 10.0.0.1, state: Init}
  - traffic: {run: ab, rate: 200kpps, loss: 0.5%, received: 190kpps, p99: 2ms}
    name: fast enough
`))
	if err != nil {
		t.Fatal(err)
	}
	ts := l.Tests
	if len(ts) != 6 {
		t.Fatalf("%d tests", len(ts))
	}
	if ts[0].Reach.To != "b:e0" || !ts[0].Reach.Reach || ts[0].Node != "a" || ts[1].Reach.Reach || ts[1].Reach.Source != "e0" {
		t.Errorf("reachability: %+v %+v", ts[0].Reach, ts[1].Reach)
	}
	if r := ts[2]; r.Prefix.String() != "0.0.0.0/0" || r.Via.String() != "10.0.0.2" || r.Table != 100 || r.Protocol != "static" || r.Dev != "e0" || r.Wait != 0 || r.Points != 1 {
		t.Errorf("route: %+v", r)
	}
	if b := ts[3]; b.Prefixes != 2 || b.WantState() != "Established" || b.Wait != 30*time.Second || b.Points != 3 || b.Name != "b's BGP session with 10.0.0.1 Established" {
		t.Errorf("bgp: %+v", b)
	}
	if o := ts[4]; o.RouterID != "10.0.0.1" || o.WantState() != "Init" {
		t.Errorf("ospf6: %+v", o)
	}
	if x := ts[5]; x.Name != "fast enough" || x.MaxLoss != 0.5 || x.MinRate != 190000 || x.MaxP99 != 2*time.Millisecond || x.Rate != "200kpps" {
		t.Errorf("traffic: %+v", x)
	}
}

// TestTestsRefused: bad tests are named at file:line:col with the fix,
// every problem at once.
func TestTestsRefused(t *testing.T) {
	_, err := Parse("t.yaml", []byte(testsLab+`  - route: {node: c, to: 10.0.0.0/24}
  - route: {node: a, to: 10.0.0.0}
  - bgp: {node: a, neighbor: 10.0.0.2}
  - traffic: {run: ab, received: 190}
  - traffic: {run: ba}
  - reachable: a -> z
  - {route: {node: a, to: 10.0.0.0/24}, address: {node: a, interface: e0, address: 10.0.0.1/24}}
  - neighbour: {node: a}
`))
	if err == nil {
		t.Fatal("no problems")
	}
	for _, want := range []string{
		`t.yaml:12:19: tests[0].route.node: "c" is no node of the lab (did you mean "a"?)`,
		`t.yaml:13:26: tests[1].route.to: "10.0.0.0" is not a prefix: write one such as 10.0.2.0/24`,
		`t.yaml:14:17: tests[2].bgp.node: a runs no FRR (no frr: under nodes.a)`,
		`t.yaml:15:34: tests[3].traffic.received: received "190": write a packet rate such as 190kpps`,
		`t.yaml:16:20: tests[4].traffic.run: no traffic run "ba" in the lab`,
		`t.yaml:17:16: tests[5].reachable: "a -> z": z is neither an address, a prefix nor a node of the lab`,
		`t.yaml:18:5: tests[6]: a test is one of reachable,`,
		`t.yaml:19:16: tests[7].neighbour: missing address:`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no problem %q in:\n%v", want, err)
		}
	}
}
