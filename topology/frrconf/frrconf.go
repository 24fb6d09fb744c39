// Package frrconf reads what nslab needs to know of an FRR configuration
// (frr.conf, or a daemon's own file; Quagga's read the same way): which
// routing protocols a node runs, on which of its interfaces, what each
// announces (network statements, interface lines, redistribute
// connected), what each takes from another (redistribute ospf, ...) and,
// for BGP, its neighbours. Learn follows that over a lab's routers to say
// which destinations each router's daemons can learn a route to. check
// uses it to tell a pair that stays silent because nothing brings its
// destination to the router from one whose routes have not been learned
// yet. It is pure: it reads text and addresses.
//
// It reads the commands FRR's daemons take, in the node they take them
// in: a router block (router ospf, router rip, router bgp, ...) runs
// until the next block or top-level command, with or without
// indentation, as FRR's parser does; "!" lines are comments. A route it
// cannot bound (a default route originated, routes redistributed from
// the kernel or static ones) is taken as a default route: it brings
// every destination; a protocol it does not read makes the configuration
// unbounded (All), so that check never expects silence that the daemons
// would not keep. Of filters, prefix lists, route maps (their prefix-list
// and community matches, and the communities they set) and standard
// community lists are read; what distribute and filter lists leave out
// is expected.
package frrconf

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Protocol is one routing protocol of a node's configuration.
type Protocol struct {
	Name string // ospf, ospf6, rip, ripng, bgp, isis, babel
	// Prefixes are announced as written (BGP's network, RIP's route); a
	// default route originated, or routes redistributed from the kernel
	// or static ones, are 0.0.0.0/0 and ::/0: every destination.
	Prefixes []netip.Prefix
	// Networks take the interfaces whose address is inside one into the
	// protocol (OSPF's and RIP's network): it runs there, and announces
	// each one's subnet.
	Networks []netip.Prefix
	// Interfaces are taken in by name (RIP's network IFNAME, ip ospf
	// area, ip router isis, OSPFv3's interface ... area).
	Interfaces []string
	// Connected: every connected subnet is announced (redistribute
	// connected).
	Connected bool
	// From are the protocols whose routes it takes (redistribute bgp),
	// FromMap the route map each passes (redistribute bgp route-map
	// NAME), ConnectedMap the one redistribute connected names.
	From         []string
	FromMap      map[string]string
	ConnectedMap string
	// Neighbors are BGP's neighbours by address; AnyNeighbor that some
	// are named otherwise (an interface, a peer group), so that every
	// BGP router on a subnet of the node's may be one.
	Neighbors   []netip.Addr
	AnyNeighbor bool
	// In and Out are the prefix lists a BGP neighbour's routes pass
	// (neighbor A prefix-list NAME in|out), by its address; InMap and
	// OutMap the route maps (neighbor A route-map NAME in|out).
	In, Out       map[netip.Addr]string
	InMap, OutMap map[netip.Addr]string
}

// Config is what a node's routing configuration says of its protocols.
type Config struct {
	Protocols []*Protocol
	// PrefixLists are the ip (and ipv6) prefix-list lines, by name, in
	// the order FRR applies them.
	PrefixLists map[string][]PrefixRule
	// RouteMaps are the route maps, by name; CommunityLists the standard
	// community lists.
	RouteMaps      map[string]RouteMap
	CommunityLists map[string][]CommunityRule
	// All: the configuration may announce anything nslab cannot bound
	// (a protocol it does not read); Why names the line.
	All bool
	Why string
}

// PrefixRule is one line of a prefix list: it permits or denies the
// routes whose prefix lies in Prefix with a length from Ge to Le (both
// Prefix's own length when the line gives neither), or any route (Any).
type PrefixRule struct {
	Permit  bool
	Any     bool
	Prefix  netip.Prefix
	Ge, Le  int
	Ordered int // seq, or the line's place
}

// Passes reports whether prefix list name lets route pr through: the
// first line that matches decides, and a route no line matches is
// denied, as FRR does. A list the configuration does not define lets
// everything through (what nslab cannot bound it takes as carried).
func (c Config) Passes(name string, pr netip.Prefix) bool {
	rules, ok := c.PrefixLists[name]
	if !ok || name == "" {
		return true
	}
	for _, r := range rules {
		if r.Any || r.Prefix.Addr().Is4() == pr.Addr().Is4() && r.Prefix.Bits() <= pr.Bits() && r.Ge <= pr.Bits() && pr.Bits() <= r.Le &&
			r.Prefix.Contains(pr.Addr()) {
			return r.Permit
		}
	}
	return false
}

// prefixListLine reads "ip prefix-list NAME [seq N] permit|deny PREFIX|any
// [ge N] [le N]".
func (c *Config) prefixListLine(f []string) {
	if len(f) < 4 {
		return
	}
	name, rest := f[2], f[3:]
	r := PrefixRule{Ordered: len(c.PrefixLists[name])*5 + 5}
	if rest[0] == "seq" && len(rest) > 2 {
		if n, err := strconv.Atoi(rest[1]); err == nil {
			r.Ordered = n
		}
		rest = rest[2:]
	}
	if len(rest) < 2 || rest[0] != "permit" && rest[0] != "deny" {
		return // a description, or what nslab does not read
	}
	r.Permit = rest[0] == "permit"
	if rest[1] == "any" {
		r.Any = true
	} else {
		p, err := netip.ParsePrefix(rest[1])
		if err != nil {
			return
		}
		r.Prefix, r.Ge, r.Le = p.Masked(), p.Bits(), p.Bits()
		for i := 2; i+1 < len(rest); i += 2 {
			n, err := strconv.Atoi(rest[i+1])
			if err != nil {
				continue
			}
			switch rest[i] {
			case "ge":
				r.Ge = n
				if r.Le == p.Bits() {
					r.Le = p.Addr().BitLen()
				}
			case "le":
				r.Le = n
			}
		}
	}
	if c.PrefixLists == nil {
		c.PrefixLists = map[string][]PrefixRule{}
	}
	rules := append(c.PrefixLists[name], r)
	slices.SortStableFunc(rules, func(a, b PrefixRule) int { return a.Ordered - b.Ordered })
	c.PrefixLists[name] = rules
}

// Address is one of a node's interface addresses, as the kernel holds
// it: the interface and the address with its prefix length.
type Address struct {
	Interface string
	Prefix    netip.Prefix
}

// Parse reads the configuration files of one node (frr.conf and the
// daemons' own files, in any order).
func Parse(texts ...string) Config {
	var c Config
	for _, text := range texts {
		c.parse(text)
	}
	return c
}

// find is c's protocol name (nil: c does not run it).
func (c Config) find(name string) *Protocol {
	for _, p := range c.Protocols {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// protocol is c's protocol name, made on first use.
func (c *Config) protocol(name string) *Protocol {
	if p := c.find(name); p != nil {
		return p
	}
	p := &Protocol{Name: name}
	c.Protocols = append(c.Protocols, p)
	return p
}

// everything marks c as unbounded, for the first line that makes it so.
func (c *Config) everything(why string) {
	if !c.All {
		c.All, c.Why = true, why
	}
}

// anyRoute is what a default route brings: every destination.
var anyRoute = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}

// block is the configuration node a line is read in.
type block struct {
	proto string    // the router block's protocol, or ""
	iface string    // the interface of an interface block, or ""
	entry *MapEntry // the route map entry of a route-map block, or nil
}

func (c *Config) parse(text string) {
	var in block
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "!") || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if next, ok := c.enter(in, f, line); ok {
			in = next
			continue
		}
		switch {
		case in.entry != nil:
			in.entry.line(f)
		case in.iface != "":
			c.interfaceLine(in.iface, f)
		case in.proto != "":
			c.routerLine(c.protocol(in.proto), f)
		}
	}
}

// enter reads a line that starts a block or is of the top level, and
// returns the block the lines after it are read in; ok is false for a
// line of block in.
func (c *Config) enter(in block, f []string, line string) (block, bool) {
	switch {
	case f[0] == "router" && len(f) > 1:
		if !known(f[1]) {
			c.everything(fmt.Sprintf("%q (a protocol nslab does not read)", line))
			return block{}, true
		}
		c.protocol(f[1])
		return block{proto: f[1]}, true
	case f[0] == "interface" && len(f) > 1 && (in.proto != "ospf6" || len(f) < 4 || f[2] != "area"):
		return block{iface: f[1]}, true
	case c.filterLine(f):
		return block{}, true
	case f[0] == "route-map" && len(f) > 1:
		return block{entry: c.routeMapLine(f)}, true
	case topLevel(f[0]) || (f[0] == "ip" || f[0] == "ipv6") && in.iface == "":
		return block{}, true
	}
	return in, false
}

// filterLine reads a prefix list's or a community list's line, and
// reports whether f is one.
func (c *Config) filterLine(f []string) bool {
	switch {
	case (f[0] == "ip" || f[0] == "ipv6") && len(f) > 1 && f[1] == "prefix-list":
		c.prefixListLine(f)
	case (f[0] == "bgp" || f[0] == "ip") && len(f) > 1 && f[1] == "community-list":
		c.communityListLine(f)
	default:
		return false
	}
	return true
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
func (c *Config) interfaceLine(iface string, f []string) {
	joined := strings.Join(f, " ")
	for prefix, proto := range map[string]string{"ip ospf area": "ospf", "ipv6 ospf6 area": "ospf6", "ip ospf6 area": "ospf6",
		"ip router isis": "isis", "ipv6 router isis": "isis"} {
		if strings.HasPrefix(joined+" ", prefix+" ") {
			p := c.protocol(proto)
			p.Interfaces = append(p.Interfaces, iface)
			return
		}
	}
}

// routerLine reads a line of protocol p's router block.
func (c *Config) routerLine(p *Protocol, f []string) {
	switch {
	case f[0] == "redistribute" && len(f) > 1:
		p.redistribute(f)
	case originatesDefault(f):
		p.Prefixes = append(p.Prefixes, anyRoute...)
	case f[0] == "neighbor" && len(f) > 2 && p.Name == "bgp":
		p.neighbor(f)
	case f[0] == "network" && len(f) > 1:
		p.network(f)
	case f[0] == "route" && len(f) > 1 && (p.Name == "rip" || p.Name == "ripng"):
		if pr, err := netip.ParsePrefix(f[1]); err == nil {
			p.Prefixes = append(p.Prefixes, pr.Masked())
		}
	case f[0] == "interface" && len(f) > 2 && p.Name == "ospf6" && f[2] == "area":
		p.Interfaces = append(p.Interfaces, f[1])
	}
}

// originatesDefault reports whether a router line sends a default route:
// default-information originate, a neighbour's default-originate, or a
// stub area (whose border router sends one into it).
func originatesDefault(f []string) bool {
	return f[0] == "default-information" && len(f) > 1 && f[1] == "originate" ||
		f[0] == "neighbor" && slices.Contains(f, "default-originate") ||
		f[0] == "area" && slices.Contains(f, "stub")
}

// redistribute reads "redistribute WHAT [route-map NAME]".
func (p *Protocol) redistribute(f []string) {
	what, rmap := f[1], ""
	if i := slices.Index(f, "route-map"); i >= 0 && i+1 < len(f) {
		rmap = f[i+1]
	}
	switch {
	case what == "connected":
		p.Connected, p.ConnectedMap = true, rmap
	case known(what):
		p.From = append(p.From, what)
		if rmap != "" {
			p.FromMap = setFilter(p.FromMap, what, rmap)
		}
	default: // kernel, static, table: routes nslab does not bound
		p.Prefixes = append(p.Prefixes, anyRoute...)
	}
}

// neighbor reads a BGP neighbor line: the neighbour, and the prefix list
// its routes pass.
func (p *Protocol) neighbor(f []string) {
	a, err := netip.ParseAddr(f[1])
	if err != nil {
		p.AnyNeighbor = true
		return
	}
	if !slices.Contains(p.Neighbors, a) {
		p.Neighbors = append(p.Neighbors, a)
	}
	if len(f) < 5 {
		return
	}
	switch f[2] + " " + f[4] {
	case "prefix-list in":
		p.In = setFilter(p.In, a, f[3])
	case "prefix-list out":
		p.Out = setFilter(p.Out, a, f[3])
	case "route-map in":
		p.InMap = setFilter(p.InMap, a, f[3])
	case "route-map out":
		p.OutMap = setFilter(p.OutMap, a, f[3])
	}
}

// setFilter records that key's routes pass filter name (a prefix list, a
// route map).
func setFilter[K comparable](m map[K]string, key K, name string) map[K]string {
	if m == nil {
		m = map[K]string{}
	}
	m[key] = name
	return m
}

// network reads a network statement: BGP's announces its prefix; OSPF's,
// RIP's and RIPng's take the interfaces inside it (or, for RIP and
// Babel, named by it) into the protocol.
func (p *Protocol) network(f []string) {
	pr, ok := networkPrefix(f)
	switch {
	case p.Name == "bgp" && ok:
		p.Prefixes = append(p.Prefixes, pr.Masked())
	case ok:
		p.Networks = append(p.Networks, pr.Masked())
	case p.Name == "rip" || p.Name == "ripng" || p.Name == "babel":
		p.Interfaces = append(p.Interfaces, f[1])
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

// Runs reports whether p runs on the interface of address x: taken in by
// name, or by a network statement holding its address.
func (p *Protocol) Runs(x Address) bool {
	if slices.Contains(p.Interfaces, x.Interface) {
		return true
	}
	for _, n := range p.Networks {
		if n.Contains(x.Prefix.Addr()) {
			return true
		}
	}
	return false
}

// Originates is what p announces of its own on a node with addrs: its
// prefixes, and the subnet of each interface it runs on (or of every
// one, with redistribute connected).
func (p *Protocol) Originates(addrs []Address) []netip.Prefix {
	out := slices.Clone(p.Prefixes)
	for _, x := range addrs {
		if p.Connected || p.Runs(x) {
			out = append(out, x.Prefix.Masked())
		}
	}
	return out
}
