package frrconf

import (
	"net/netip"
	"strings"
	"testing"
)

// r1 is a node with three subnets and a loopback.
var r1 = []Address{
	{Interface: "eth0", Prefix: netip.MustParsePrefix("193.10.11.1/24")},
	{Interface: "eth1", Prefix: netip.MustParsePrefix("195.11.14.1/24")},
	{Interface: "eth2", Prefix: netip.MustParsePrefix("10.0.0.1/30")},
	{Interface: "lo", Prefix: netip.MustParsePrefix("1.1.1.1/32")},
}

// TestCovers: each kind of line announces what FRR's daemon would, and
// no more; the destinations are on r1's subnets (195.11.14.9, 10.0.0.2,
// 193.10.11.7, 1.1.1.1) or away from them (8.8.8.8, 200.1.1.1).
func TestCovers(t *testing.T) {
	for _, c := range []struct {
		name, conf string
		yes, no    []string
	}{
		{"Kathara's simple peering: a session, nothing announced", `hostname bgpd
password zebra
router bgp 1
neighbor 193.10.11.2 remote-as 2
neighbor 193.10.11.2 description Router 2 of AS2
log file /var/log/quagga/bgpd.log
debug bgp`, nil, []string{"195.11.14.9", "10.0.0.2", "193.10.11.7", "200.1.1.1"}},
		{"BGP network, unindented as Quagga's labs write it", `router bgp 1
network 195.11.14.0/24
neighbor 193.10.11.2 remote-as 2
log file x
network 10.0.0.0/30`, []string{"195.11.14.9"}, []string{"10.0.0.2", "193.10.11.7"}},
		{"BGP network in an address family, with a mask, and classful", `router bgp 1
 address-family ipv4 unicast
  network 10.0.0.0 mask 255.255.255.252
  network 200.1.1.0
 exit-address-family
!`, []string{"10.0.0.2", "200.1.1.1"}, []string{"195.11.14.9"}},
		{"OSPF network takes the interfaces inside it", `router ospf
 network 195.11.0.0/16 area 0.0.0.0
 network 1.1.1.1/32 area 0`, []string{"195.11.14.9", "1.1.1.1"}, []string{"10.0.0.2", "193.10.11.7", "8.8.8.8"}},
		{"OSPF by interface; a comment does not end the block", `interface eth2
 ! the link to r2
 ip ospf area 0
!
router ospf
 ! nothing here`, []string{"10.0.0.2"}, []string{"195.11.14.9"}},
		{"RIP by name and by prefix, and a route of its own", `router rip
network eth0
network 10.0.0.0/8
route 172.16.0.0/16`, []string{"193.10.11.7", "10.0.0.2", "172.16.3.3"}, []string{"195.11.14.9"}},
		{"redistribute connected", `router bgp 2
 redistribute connected`, []string{"195.11.14.9", "10.0.0.2", "1.1.1.1"}, []string{"8.8.8.8"}},
		{"redistribute of another protocol: that one announces its own", `router bgp 2
 redistribute ospf
router ospf
 network 10.0.0.0/30 area 0`, []string{"10.0.0.2"}, []string{"195.11.14.9"}},
		{"an ip route line ends the router block", `router rip
 network eth0
ip route 0.0.0.0/0 10.0.0.2
 network eth1`, []string{"193.10.11.7"}, []string{"195.11.14.9"}},
		{"OSPFv3's interface ... area in router ospf6", `router ospf6
 interface eth1 area 0.0.0.0
interface eth2
 ipv6 ospf6 area 0`, []string{"195.11.14.9", "10.0.0.2"}, []string{"193.10.11.7"}},
		{"a default route originated announces everything", `router ospf
 default-information originate`, []string{"8.8.8.8"}, nil},
		{"a neighbour's default route too", `router bgp 1
 neighbor 1.2.3.4 default-originate`, []string{"8.8.8.8"}, nil},
		{"static routes redistributed: unbounded", `router rip
 redistribute static`, []string{"8.8.8.8"}, nil},
		{"a protocol nslab does not read: unbounded", `router eigrp 1`, []string{"8.8.8.8"}, nil},
	} {
		a := Parse(c.conf)
		for _, d := range c.yes {
			if !announces(a, netip.MustParseAddr(d), r1) {
				t.Errorf("%s: %s not announced, want it (%+v)", c.name, d, a)
			}
		}
		for _, d := range c.no {
			if announces(a, netip.MustParseAddr(d), r1) {
				t.Errorf("%s: %s announced, want not (%+v)", c.name, d, a)
			}
		}
	}
}

// announces reports whether a protocol of c announces dst of its own on
// a node with addrs, or c is unbounded.
func announces(c Config, dst netip.Addr, addrs []Address) bool {
	if c.All {
		return true
	}
	for _, p := range c.Protocols {
		for _, pr := range p.Originates(addrs) {
			if pr.Contains(dst) {
				return true
			}
		}
	}
	return false
}

// TestWhy: an unbounded configuration names the line that makes it so.
func TestWhy(t *testing.T) {
	a := Parse("router ospf\n network 10.0.0.0/8 area 0\n", "router eigrp 1\n network 10.0.0.0\n")
	if !a.All || !strings.Contains(a.Why, `"router eigrp 1" (a protocol nslab does not read)`) {
		t.Errorf("got %+v", a)
	}
}
