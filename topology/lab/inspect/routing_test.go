package inspect

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestRouteInfosECMP: an ECMP route is a row per next hop, each with its
// gateway and device; an IPv4 route through an IPv6 next hop (RTA_VIA)
// shows it; FRR's protocol numbers are named.
func TestRouteInfosECMP(t *testing.T) {
	names := map[int]string{2: "eth0", 3: "eth1"}
	_, dst, _ := net.ParseCIDR("10.10.10.1/32")
	r := netlink.Route{Dst: dst, Protocol: 189, Table: 254, MultiPath: []*netlink.NexthopInfo{
		{LinkIndex: 2, Gw: net.ParseIP("192.168.1.2")},
		{LinkIndex: 3, Via: &netlink.Via{AddrFamily: netlink.FAMILY_V6, Addr: net.ParseIP("fe80::1")}},
	}}
	got := routeInfos(r, names)
	if len(got) != 2 || got[0].Via != "192.168.1.2" || got[0].Dev != "eth0" || got[1].Via != "fe80::1" || got[1].Dev != "eth1" || got[0].Proto != "rip" {
		t.Errorf("%+v", got)
	}
}

// TestRIPSources reads the neighbours of FRR 8.4's `show ip rip status`
// (its output as a deployed Kathara RIP lab gave it).
func TestRIPSources(t *testing.T) {
	out := `Routing Protocol is "rip"
  Default version control: send version 2, receive any version
    Interface        Send  Recv   Key-chain
    eth0             2     1 2
  Routing for Networks:
    100.1.0.0/16
  Routing Information Sources:
    Gateway          BadPackets BadRoutes  Distance Last Update
    100.1.0.2                0         0       120   00:00:16
    100.1.0.10               0         0       120   00:00:18
  Distance: (default is 120)
`
	got := ripSources([]byte(out), "rip")
	if len(got) != 2 || got[0].Neighbor != "100.1.0.2" || got[1].State != "update 00:00:18 ago" || got[0].Protocol != "rip" {
		t.Errorf("%+v", got)
	}
}
