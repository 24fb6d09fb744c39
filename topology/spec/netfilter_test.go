package spec

import (
	"net/netip"
	"os"
	"testing"
)

// natLab is testdata/nat-lab.yaml: a NAT router between a LAN and a WAN
// (topology/walk's tests trace through it too).
var natLab = func() string {
	data, err := os.ReadFile("testdata/nat-lab.yaml")
	if err != nil {
		panic(err)
	}
	return string(data)
}()

// TestNetfilterRules parses every kind of NAT and firewall rule, and has
// one case per validation rule, with its place in the file.
func TestNetfilterRules(t *testing.T) {
	l, err := Parse("x.yaml", []byte(natLab))
	if err != nil {
		t.Fatal(err)
	}
	gw := l.Node("gw")
	var got []string
	for _, r := range gw.NAT {
		got = append(got, r.String())
	}
	for _, r := range gw.Firewall.Rules {
		got = append(got, r.String())
	}
	want := []string{
		"masquerade out wan0 from 192.168.10.0/24",
		"snat out wan0 to 172.30.0.1",
		"dnat in wan0 tcp port 8080 to 192.168.10.2:80",
		"dnat in wan0 udp port 53 to 192.168.10.2",
		"drop in lan0 to 10.0.0.0/8",
		"accept state established,related",
		"accept in lan0 out wan0",
		"accept in wan0 to 192.168.10.2 tcp port 80",
	}
	if len(got) != len(want) {
		t.Fatalf("rules %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rule %d = %q, want %q", i, got[i], want[i])
		}
	}
	if gw.Firewall.Policy != Drop || gw.NAT[2].Path != "nodes.gw.nat[2]" || gw.Firewall.Rules[1].Path != "nodes.gw.firewall.rules[1]" {
		t.Errorf("policy %q, paths %q %q", gw.Firewall.Policy, gw.NAT[2].Path, gw.Firewall.Rules[1].Path)
	}
	cases := netfilterCases
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { problemAfterEdit(t, natLab, c.from, c.to, c.where, c.msg) })
	}
}

var netfilterCases = []struct {
	name, from, to string
	where, msg     string
}{
	{"unknown interface", "masquerade: {out: wan0,", "masquerade: {out: wan1,", "x.yaml:13:27: nodes.gw.nat[0].masquerade.out", `no interface "wan1" (did you mean "wan0"?)`},
	{"unknown rule kind", "- snat: {", "- sant: {", "x.yaml:14:9: nodes.gw.nat[1].sant", `did you mean "snat"?`},
	{"two kinds in one rule", "- snat: {out: wan0, to: 172.30.0.1}", "- {snat: {out: wan0, to: 172.30.0.1}, masquerade: wan0}", "x.yaml:14:9: nodes.gw.nat[1]", "exactly one of"},
	{"unknown key", "dnat: {in: wan0, port: 8080,", "dnat: {in: wan0, prot: 8080,", "x.yaml:15:26: nodes.gw.nat[2].dnat.prot", `did you mean "proto"?`},
	{"bad port", "port: 8080", "port: 80800", "x.yaml:15:32: nodes.gw.nat[2].dnat.port", "between 1 and 65535"},
	{"bad protocol", "proto: udp", "proto: sctp", "x.yaml:16:33: nodes.gw.nat[3].dnat.proto", "tcp, udp, icmp, icmpv6"},
	{"port on icmp", "proto: udp, port: 53", "proto: icmp, port: 53", "x.yaml:16:45: nodes.gw.nat[3].dnat.port", "icmp has no ports"},
	{"dnat outside the lab", `to: "192.168.10.2:80"`, `to: "8.8.8.8:80"`, "x.yaml:15:42: nodes.gw.nat[2].dnat.to", "inside the lab"},
	{"dnat port without port", "proto: udp, port: 53, to: 192.168.10.2", `to: "192.168.10.2:53"`, "x.yaml:16:30: nodes.gw.nat[3].dnat.to", "give port:"},
	{"snat to another node's address", "to: 172.30.0.1}", "to: 172.30.0.2}", "x.yaml:14:31: nodes.gw.nat[1].snat.to", "would not reach gw"},
	{"snat with a port", "to: 172.30.0.1}", `to: "172.30.0.1:99"}`, "x.yaml:14:31: nodes.gw.nat[1].snat.to", "source address only"},
	{"family mix", "from: 192.168.10.0/24}", `from: "fd00:10::/64"}`, "x.yaml:13:21: nodes.gw.nat[0].masquerade", "no IPv6 address to masquerade as"},
	{"snat needs out", "snat: {out: wan0, to", "snat: {to", "x.yaml:14:15: nodes.gw.nat[1].snat", "needs out:"},
	{"dnat needs to", `, port: 8080, to: "192.168.10.2:80"}`, ", port: 8080}", "x.yaml:15:15: nodes.gw.nat[2].dnat", "needs to:"},
	{"masquerade shadows snat", "masquerade: {out: wan0, from: 192.168.10.0/24}", "masquerade: wan0", "x.yaml:14:9: nodes.gw.nat[1]", "never matches: nodes.gw.nat[0]"},
	{"port of a bridge", "      wan0: {addresses: [172.30.0.1/24]}\n", "      wan0: {addresses: [172.30.0.1/24]}\n    bridges: {br0: {ports: [lan0]}}\n", "x.yaml:21:22: nodes.gw.firewall.rules[0].drop.in", "lan0 is a port of bridge br0"},
	{"firewall shadowed", "- drop: {in: lan0, to: 10.0.0.0/8}", "- drop: {in: lan0}", "x.yaml:22:11: nodes.gw.firewall.rules[2]", "never matches: nodes.gw.firewall.rules[0] (drop in lan0)"},
	{"firewall bad state", "state: [established, related]", "state: [established, relatd]", "x.yaml:21:27: nodes.gw.firewall.rules[1].accept.state", `"relatd"`},
	{"firewall bad policy", "policy: drop", "policy: reject", "x.yaml:18:15: nodes.gw.firewall.policy", "accept or drop"},
	{"firewall family mix", "to: 10.0.0.0/8}", `to: "fd00::/8", from: 10.0.0.0/8}`, "x.yaml:20:17: nodes.gw.firewall.rules[0].drop", "different address families"},
	{"icmp with an IPv6 prefix", "to: 10.0.0.0/8}", `to: "fd00::/8", proto: icmp}`, "x.yaml:20:51: nodes.gw.firewall.rules[0].drop.proto", "never matches"},
	{"firewall on a host", "    forwarding: true\n", "", "x.yaml:17:7: nodes.gw.firewall", "forwards nothing"},
	{"bad prefix", "to: 10.0.0.0/8}", "to: 10.0.0.1/8}", "x.yaml:20:32: nodes.gw.firewall.rules[0].drop.to", "write 10.0.0.0/8"},
}

// TestMatchCovers: the shadowing rule, case by case.
func TestMatchCovers(t *testing.T) {
	p := netip.MustParsePrefix
	cases := []struct {
		a, b Match
		want bool
	}{
		{Match{}, Match{In: "a", Proto: "tcp", Port: 80}, true},
		{Match{In: "a"}, Match{In: "b"}, false},
		{Match{To: p("10.0.0.0/8")}, Match{To: p("10.1.0.0/16")}, true},
		{Match{To: p("10.1.0.0/16")}, Match{To: p("10.0.0.0/8")}, false},
		{Match{To: p("10.0.0.0/8")}, Match{}, false},
		{Match{Proto: "tcp"}, Match{Proto: "tcp", Port: 22}, true},
		{Match{Proto: "tcp", Port: 22}, Match{Proto: "tcp"}, false},
		{Match{State: []string{"established", "related"}}, Match{State: []string{"established"}}, true},
		{Match{State: []string{"new"}}, Match{State: []string{"new", "established"}}, false},
		{Match{Proto: "icmp"}, Match{From: p("fd00::/8")}, false},
	}
	for i, c := range cases {
		if got := c.a.covers(c.b); got != c.want {
			t.Errorf("case %d: %v covers %v = %v, want %v", i, c.a, c.b, got, c.want)
		}
	}
}

// TestMatchMatches: the packets a match selects, as path and check use it.
func TestMatchMatches(t *testing.T) {
	a := netip.MustParseAddr
	pkt := Packet{In: "wan0", Out: "lan0", Src: a("172.30.0.2"), Dst: a("192.168.10.2"), Proto: "tcp", Port: 80, State: "new"}
	p := netip.MustParsePrefix
	for i, c := range []struct {
		m    Match
		want bool
	}{
		{Match{}, true},
		{Match{In: "wan0", To: p("192.168.10.2/32"), Proto: "tcp", Port: 80}, true},
		{Match{In: "lan0"}, false},
		{Match{From: p("10.0.0.0/8")}, false},
		{Match{Proto: "udp"}, false},
		{Match{State: []string{"established"}}, false},
		{Match{Proto: "icmpv6"}, false},
		{Match{To: p("fd00::/8")}, false},
	} {
		if got := c.m.Matches(pkt); got != c.want {
			t.Errorf("case %d: %v matches = %v, want %v", i, c.m, got, c.want)
		}
	}
}
