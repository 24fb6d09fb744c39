// Package frrconf reads what nslab needs to know of an FRR configuration
// (frr.conf, or a daemon's own file; Quagga's read the same way): which
// of a node's subnets and which prefixes its routing protocols announce
// to its neighbours. check uses it to tell a pair that stays silent
// because no configuration announces its destination from one whose
// routes have not been learned yet. It is pure: it reads text.
//
// It reads the commands FRR's daemons take, in the node they take them
// in: a router block (router ospf, router rip, router bgp, ...) runs
// until the next block or top-level command, with or without
// indentation, as FRR's parser does; "!" lines are comments. What it
// cannot bound (a default route originated, routes redistributed from
// the kernel or static ones, a protocol it does not read) makes the
// configuration announce everything, so that check never expects
// silence that the daemons would not keep.
package frrconf

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Announced is what a node's routing configuration announces.
type Announced struct {
	// All: the configuration may announce any destination; Why says
	// which line makes it so.
	All bool
	Why string
	// Prefixes are announced as written (BGP's network, RIP's route):
	// every destination inside one.
	Prefixes []netip.Prefix
	// Networks take the interfaces whose address is inside one into
	// their protocol (OSPF's and RIP's network): each such interface's
	// subnet is announced.
	Networks []netip.Prefix
	// Interfaces are taken into a protocol by name (RIP's network
	// IFNAME, ip ospf area, ip router isis, OSPFv3's interface ... area):
	// their subnets are announced.
	Interfaces []string
	// Connected: every connected subnet is (redistribute connected).
	Connected bool
}

// Address is one of a node's interface addresses, as the kernel holds
// it: the interface and the address with its prefix length.
type Address struct {
	Interface string
	Prefix    netip.Prefix
}

// Covers reports whether a announces dst, for a node with addrs: dst is
// inside an announced prefix, or on the subnet of an address whose
// interface the configuration takes into a protocol.
func (a Announced) Covers(dst netip.Addr, addrs []Address) bool {
	if a.All {
		return true
	}
	for _, p := range a.Prefixes {
		if p.Contains(dst) {
			return true
		}
	}
	for _, x := range addrs {
		if !x.Prefix.Masked().Contains(dst) {
			continue
		}
		if a.Connected || slices.Contains(a.Interfaces, x.Interface) {
			return true
		}
		for _, n := range a.Networks {
			if n.Contains(x.Prefix.Addr()) {
				return true
			}
		}
	}
	return false
}

// Parse reads the configuration files of one node (frr.conf and the
// daemons' own files, in any order) for what they announce.
func Parse(texts ...string) Announced {
	var a Announced
	for _, text := range texts {
		a.parse(text)
	}
	return a
}

// everything marks a as announcing any destination, for the first line
// that does.
func (a *Announced) everything(why string) {
	if !a.All {
		a.All, a.Why = true, why
	}
}

// block is the configuration node a line is read in.
type block struct {
	kind  string // "router ospf", "router bgp", "interface", ... or "" at the top
	iface string // the interface of an interface block
}

func (a *Announced) parse(text string) {
	var in block
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "!") || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case f[0] == "router" && len(f) > 1:
			in = block{kind: "router " + f[1]}
			if !known(f[1]) {
				a.everything(fmt.Sprintf("%q (a protocol nslab does not read)", line))
			}
			continue
		case f[0] == "interface" && len(f) > 1 && (in.kind != "router ospf6" || len(f) < 4 || f[2] != "area"):
			in = block{kind: "interface", iface: f[1]}
			continue
		case topLevel(f[0]) || (f[0] == "ip" || f[0] == "ipv6") && in.kind != "interface":
			in = block{}
			continue
		}
		switch in.kind {
		case "interface":
			a.interfaceLine(in.iface, f)
		case "":
		default:
			a.routerLine(in.kind, f, line)
		}
	}
}

// known are the routing protocols whose announcements Parse reads.
func known(proto string) bool {
	return slices.Contains([]string{"ospf", "ospf6", "rip", "ripng", "bgp", "isis", "babel"}, proto)
}

// topLevel reports whether a command of this first word is one of the
// configuration's top level, which ends a router or interface block
// (ip and ipv6 do too, but in an interface block, where they are its
// own).
func topLevel(word string) bool {
	return slices.Contains([]string{"hostname", "password", "enable", "log", "debug", "line", "access-list",
		"route-map", "key", "frr", "service", "end", "exit", "agentx", "vrf", "segment-routing", "mpls"}, word)
}

// interfaceLine reads a line of an interface block: the commands that
// take the interface into a protocol.
func (a *Announced) interfaceLine(iface string, f []string) {
	joined := strings.Join(f, " ")
	for _, p := range []string{"ip ospf area", "ipv6 ospf6 area", "ip router isis", "ipv6 router isis", "ip ospf6 area"} {
		if strings.HasPrefix(joined, p+" ") || joined == p {
			a.Interfaces = append(a.Interfaces, iface)
			return
		}
	}
}

// routerLine reads a line of a router block of kind.
func (a *Announced) routerLine(kind string, f []string, line string) {
	switch {
	case f[0] == "redistribute" && len(f) > 1:
		a.redistribute(kind, f[1], line)
	case f[0] == "default-information" && len(f) > 1 && f[1] == "originate":
		a.everything(fmt.Sprintf("%q in %s (a default route)", line, kind))
	case f[0] == "neighbor" && slices.Contains(f, "default-originate"):
		a.everything(fmt.Sprintf("%q in %s (a default route)", line, kind))
	case f[0] == "network" && len(f) > 1:
		a.network(kind, f, line)
	case f[0] == "route" && len(f) > 1 && (kind == "router rip" || kind == "router ripng"):
		if p, err := netip.ParsePrefix(f[1]); err == nil {
			a.Prefixes = append(a.Prefixes, p.Masked())
		}
	case f[0] == "interface" && len(f) > 2 && kind == "router ospf6" && f[2] == "area":
		a.Interfaces = append(a.Interfaces, f[1])
	}
}

// redistribute reads a redistribute line of what.
func (a *Announced) redistribute(kind, what, line string) {
	switch what {
	case "connected":
		a.Connected = true
	case "ospf", "ospf6", "rip", "ripng", "bgp", "isis", "babel":
		// Routes another protocol learned: that protocol's
		// announcements, read where it is configured.
	default:
		a.everything(fmt.Sprintf("%q in %s (routes nslab does not bound)", line, kind))
	}
}

// network reads a network statement: BGP's announces its prefix; OSPF's,
// RIP's and RIPng's take the interfaces inside it (or, for RIP, named by
// it) into the protocol.
func (a *Announced) network(kind string, f []string, line string) {
	p, ok := networkPrefix(f)
	switch {
	case kind == "router bgp" && ok:
		a.Prefixes = append(a.Prefixes, p.Masked())
	case kind == "router bgp":
		a.everything(fmt.Sprintf("%q in %s (a network nslab does not read)", line, kind))
	case ok:
		a.Networks = append(a.Networks, p.Masked())
	case kind == "router rip" || kind == "router ripng" || kind == "router babel":
		a.Interfaces = append(a.Interfaces, f[1])
	default:
		a.everything(fmt.Sprintf("%q in %s (a network nslab does not read)", line, kind))
	}
}

// networkPrefix is the prefix of a network statement: A.B.C.D/M,
// A.B.C.D mask M.M.M.M, or a classful A.B.C.D (BGP's).
func networkPrefix(f []string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(f[1]); err == nil {
		return p, true
	}
	addr, err := netip.ParseAddr(f[1])
	if err != nil || !addr.Is4() {
		return netip.Prefix{}, false
	}
	if len(f) > 3 && f[2] == "mask" {
		m, err := netip.ParseAddr(f[3])
		if err != nil || !m.Is4() {
			return netip.Prefix{}, false
		}
		bits := 0
		for _, b := range m.As4() {
			for ; b&0x80 != 0; b <<= 1 {
				bits++
			}
		}
		return netip.PrefixFrom(addr, bits), true
	}
	switch first := addr.As4()[0]; {
	case first < 128:
		return netip.PrefixFrom(addr, 8), true
	case first < 192:
		return netip.PrefixFrom(addr, 16), true
	default:
		return netip.PrefixFrom(addr, 24), true
	}
}
