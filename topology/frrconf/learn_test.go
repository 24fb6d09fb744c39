package frrconf

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// addrs are a router's addresses, "eth0=1.0.1.1/24" each.
func addrs(list ...string) []Address {
	var out []Address
	for _, s := range list {
		name, p, _ := strings.Cut(s, "=")
		out = append(out, Address{Interface: name, Prefix: netip.MustParsePrefix(p)})
	}
	return out
}

// twoASes is Kathara's bgp-ospf-rip interplay, cut to two systems: AS1
// runs RIP inside and a1 redistributes BGP into it; AS2 runs OSPF and a2
// redistributes BGP; each border announces its /8 in BGP. The link
// between the borders (12.0.0.0/30) is in RIP (a1 redistributes its
// connected subnets) and in no BGP.
func twoASes(a2Names string) []Router {
	return []Router{
		{Name: "a1", Addrs: addrs("eth0=1.0.1.1/24", "eth2=12.0.0.1/30"), Config: Parse(`router rip
network 1.0.0.0/8
redistribute connected
redistribute bgp`, `router bgp 1
network 1.0.0.0/8
neighbor 12.0.0.2 remote-as 2`)},
		{Name: "b1", Addrs: addrs("eth0=1.0.1.2/24", "eth1=1.0.2.1/24"), Config: Parse(`router rip
network 1.0.0.0/8
redistribute connected`)},
		{Name: "a2", Addrs: addrs("eth0=2.0.1.1/24", "eth2=12.0.0.2/30"), Config: Parse(`router bgp 2
network 2.0.0.0/8
neighbor `+a2Names+` remote-as 1`, `router ospf
network 2.0.0.0/8 area 0
redistribute bgp`)},
		{Name: "b2", Addrs: addrs("eth0=2.0.1.2/24", "eth1=2.0.2.1/24"), Config: Parse(`router ospf
 network 2.0.0.0/8 area 0.0.0.0`)},
	}
}

// TestLearn: routes cross from one protocol to another where a router
// redistributes them, and no further; a BGP session needs each side to
// name the other.
func TestLearn(t *testing.T) {
	l := Learn(twoASes("12.0.0.1"))
	for _, c := range []struct {
		router, dst string
		want        bool
	}{
		{"b2", "1.0.2.5", true},  // AS1's /8, by BGP, into AS2's OSPF at a2
		{"b1", "2.0.2.9", true},  // AS2's /8, by BGP, into AS1's RIP at a1
		{"b1", "12.0.0.2", true}, // a1's connected link, in RIP
		{"b2", "12.0.0.1", false},
		{"a2", "1.0.1.7", true},
		{"b2", "8.8.8.8", false},
	} {
		got, why := l.Learns(c.router, netip.MustParseAddr(c.dst))
		if got != c.want {
			t.Errorf("%s learns %s: %v (%s), want %v", c.router, c.dst, got, why, c.want)
		}
	}
	if _, why := l.Learns("b2", netip.MustParseAddr("12.0.0.1")); !strings.Contains(why, "12.0.0.0/30 by a1 in rip") || !strings.Contains(why, "no protocol of b2's (ospf)") {
		t.Errorf("why b2 learns no route to 12.0.0.1: %s", why)
	}
	if _, why := l.Learns("b2", netip.MustParseAddr("8.8.8.8")); why != "no routing configuration of the lab announces it" {
		t.Errorf("why b2 learns no route to 8.8.8.8: %s", why)
	}
	// a2 names a neighbour that is not a1's: no session, no AS1 in AS2.
	if got, _ := Learn(twoASes("12.0.0.9")).Learns("b2", netip.MustParseAddr("1.0.2.5")); got {
		t.Errorf("b2 learns AS1's /8 though a2 does not name a1 as its neighbour")
	}
}

// TestLearnDefault: a default route originated brings every destination
// to the routers its protocol reaches; a protocol nslab does not read
// makes the lab unbounded.
func TestLearnDefault(t *testing.T) {
	rs := []Router{
		{Name: "edge", Addrs: addrs("eth0=10.0.0.1/30"), Config: Parse("router ospf\n network 10.0.0.0/30 area 0\n default-information originate always\n")},
		{Name: "core", Addrs: addrs("eth0=10.0.0.2/30"), Config: Parse("router ospf\n network 10.0.0.0/8 area 0\n")},
	}
	if got, why := Learn(rs).Learns("core", netip.MustParseAddr("203.0.113.1")); !got {
		t.Errorf("core learns no default route from edge: %s", why)
	}
	// What a router announces is no route of its own: edge, which
	// sends the default, has none beyond its links (Kathara's transit
	// AS lab: as20r1's "network 0.0.0.0/0"), and core's routes do not
	// come back to it (from core, the default is edge's again).
	if got, _ := Learn(rs).Learns("edge", netip.MustParseAddr("203.0.113.1")); got {
		t.Errorf("edge learns a route to 203.0.113.1 from its own default")
	}
	rs[1].Config = Parse("router ospf\n network 10.0.0.0/8 area 0\n default-information originate always\n")
	if got, why := Learn(rs).Learns("edge", netip.MustParseAddr("203.0.113.1")); !got {
		t.Errorf("edge learns no default route from core, which sends one too: %s", why)
	}
	rs[1].Config = Parse("router eigrp 1\n")
	if l := Learn(rs); !l.All || !strings.Contains(l.Why, "core") {
		t.Errorf("a protocol nslab does not read: %+v", l)
	}
}

// TestLearnPrefixLists: Kathara's bgp-prefix-filtering: router1 sends
// router2 only 195.11.14.0/24 and takes everything from it but
// 200.1.1.0/24.
func TestLearnPrefixLists(t *testing.T) {
	rs := []Router{
		{Name: "router1", Addrs: addrs("eth0=193.10.11.1/24", "eth1=195.11.14.1/24", "eth2=195.11.15.1/24"), Config: Parse(`router bgp 1
	neighbor 193.10.11.2 remote-as 2
	neighbor 193.10.11.2 prefix-list partialOut out
	neighbor 193.10.11.2 prefix-list partialIn in
	network 195.11.14.0/24
	network 195.11.15.0/24
ip prefix-list partialOut permit 195.11.14.0/24
ip prefix-list partialIn deny 200.1.1.0/24
ip prefix-list partialIn permit any`)},
		{Name: "router2", Addrs: addrs("eth0=193.10.11.2/24", "eth1=200.1.1.1/24", "eth2=200.1.2.1/24"), Config: Parse(`router bgp 2
	no bgp ebgp-requires-policy
	neighbor 193.10.11.1 remote-as 1
	network 200.1.1.0/24
	network 200.1.2.0/24`)},
	}
	l := Learn(rs)
	for _, c := range []struct {
		router, dst string
		want        bool
	}{
		{"router2", "195.11.14.1", true},
		{"router2", "195.11.15.1", false}, // not in partialOut: denied
		{"router1", "200.1.2.1", true},
		{"router1", "200.1.1.1", false}, // denied by partialIn
	} {
		if got, why := l.Learns(c.router, netip.MustParseAddr(c.dst)); got != c.want {
			t.Errorf("%s learns %s: %v (%s), want %v", c.router, c.dst, got, why, c.want)
		}
	}
}

// TestPasses: a prefix list's lines apply in seq order, the first that
// matches decides, ge and le bound the length, and what none matches is
// denied; a list the configuration lacks lets everything through.
func TestPasses(t *testing.T) {
	c := Parse(`ip prefix-list L seq 20 permit 10.0.0.0/8 le 24
ip prefix-list L seq 10 deny 10.1.0.0/16 ge 24
ip prefix-list L seq 30 permit 0.0.0.0/0`)
	for pr, want := range map[string]bool{
		"10.2.0.0/16":   true,  // seq 20
		"10.1.5.0/24":   false, // seq 10 first
		"10.1.0.0/16":   true,  // seq 10 wants /24 or longer
		"10.2.3.0/25":   false, // longer than seq 20's le, not /0
		"0.0.0.0/0":     true,
		"2001:db8::/32": false,
	} {
		if got := c.Passes("L", netip.MustParsePrefix(pr)); got != want {
			t.Errorf("L passes %s: %v, want %v", pr, got, want)
		}
	}
	if !c.Passes("undefined", netip.MustParsePrefix("10.0.0.0/8")) {
		t.Errorf("a list the configuration lacks stopped a route")
	}
}

// TestLearnRouteMaps: Kathara's exam lab "alien", cut to three systems:
// as4 tags its two /24s with communities on the way out (route-map
// communityOut), and as3 keeps those tagged 3:1 from as1 (route-map rmap
// out, matching a community list); a route map on redistribution into
// RIP that denies everything keeps BGP's routes out of it.
func TestLearnRouteMaps(t *testing.T) {
	rs := []Router{
		{Name: "as1", Addrs: addrs("eth0=1.3.0.1/30"), Config: Parse(`router bgp 1
 neighbor 1.3.0.2 remote-as 3`)},
		{Name: "as3", Addrs: addrs("eth0=1.3.0.2/30", "eth1=3.4.0.1/30", "eth2=3.3.0.1/24"), Config: Parse(`router bgp 3
 neighbor 1.3.0.1 remote-as 1
 neighbor 3.4.0.2 remote-as 4
 neighbor 1.3.0.1 route-map rmap out
bgp community-list standard filterCommunity seq 5 permit 3:1
route-map rmap deny 10
 match community filterCommunity
route-map rmap permit 20
`, `router rip
 network 3.3.0.0/24
 redistribute bgp route-map none
route-map none deny 10
`)},
		{Name: "rip", Addrs: addrs("eth0=3.3.0.2/24"), Config: Parse("router rip\n network 3.3.0.0/24\n")},
		{Name: "as4", Addrs: addrs("eth0=3.4.0.2/30", "eth1=4.4.1.1/24", "eth2=4.4.2.1/24"), Config: Parse(`router bgp 4
 neighbor 3.4.0.1 remote-as 3
 redistribute connected
 neighbor 3.4.0.1 route-map communityOut out
ip prefix-list myPrefixList1 permit 4.4.1.0/24
ip prefix-list myPrefixList2 permit 4.4.2.0/24
route-map communityOut permit 10
 match ip address prefix-list myPrefixList1
 set community 3:1
route-map communityOut permit 20
 match ip address prefix-list myPrefixList2
 set community 3:2
route-map communityOut permit 30
`)},
	}
	l := Learn(rs)
	for _, c := range []struct {
		router, dst string
		want        bool
	}{
		{"as3", "4.4.1.9", true},
		{"as3", "4.4.2.9", true},
		{"as1", "4.4.1.9", false}, // tagged 3:1: rmap denies it
		{"as1", "4.4.2.9", true},  // tagged 3:2
		{"as1", "3.4.0.2", true},  // as4's link, untagged (entry 30)
		{"rip", "4.4.2.9", false}, // route-map none keeps BGP out of RIP
	} {
		if got, why := l.Learns(c.router, netip.MustParseAddr(c.dst)); got != c.want {
			t.Errorf("%s learns %s: %v (%s), want %v", c.router, c.dst, got, why, c.want)
		}
	}
}

// TestApply: a route map's entries apply in seq order and the first that
// matches decides; sets change the communities; an entry whose match
// nslab does not read may go either way, so both outcomes come out; a map
// the configuration lacks lets everything through.
func TestApply(t *testing.T) {
	c := Parse(`ip prefix-list ten permit 10.0.0.0/8 le 32
route-map M deny 5
 match ip address prefix-list ten
route-map M permit 20
 match as-path 1
 set community 65000:1 additive
route-map M permit 30
 set community 65000:2
`)
	r := Route{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Communities: "1:1"}
	if got := c.Apply("M", r); len(got) != 0 {
		t.Errorf("10.1.0.0/16 passes M: %v, want denied by seq 5", got)
	}
	r.Prefix = netip.MustParsePrefix("192.0.2.0/24")
	want := []Route{{r.Prefix, "1:1 65000:1"}, {r.Prefix, "65000:2"}}
	if got := c.Apply("M", r); !slices.Equal(got, want) {
		t.Errorf("192.0.2.0/24 through M: %v, want %v", got, want)
	}
	if got := c.Apply("undefined", r); !slices.Equal(got, []Route{r}) {
		t.Errorf("a map the configuration lacks: %v", got)
	}
}
