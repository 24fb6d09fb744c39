package frrconf

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Router is a node of a lab that runs routing daemons: its name, its
// addresses and its configuration.
type Router struct {
	Name   string
	Addrs  []Address
	Config Config
}

// Learned is what each router of a lab can learn a route to, as its
// protocols bring it (see Learn).
type Learned struct {
	// All: some router's configuration is unbounded (Config.All), so
	// any router may learn anything; Why says which.
	All bool
	Why string
	// known is each router's prefixes, by protocol, each with the
	// routers that originate it (a router's own announcement is no route
	// of its own: it has one only from another).
	known map[string]map[string]map[Route]origins
	// origins says who announces each prefix, in which protocol.
	origins map[netip.Prefix][]string
	// protocols are each router's protocols, by name.
	protocols map[string][]string
	routers   []Router
}

// Learn follows what each router's protocols announce to the routers
// their protocols reach, as the daemons do once converged: an interior
// protocol (OSPF, RIP, IS-IS, Babel) reaches the routers running it on
// an interface of a subnet they share; BGP the neighbours each names of
// the other (by an address of the other's; a neighbour named otherwise
// may be any BGP router on a subnet they share); a router takes into a
// protocol what another of its own protocols knows where that one's
// configuration redistributes it. A router's own announcement (a
// default it originates, a network statement) is no route of its own: it
// learns a prefix only where another router originates it too. Of
// filters, BGP's prefix lists and route maps on a neighbour (neighbor A
// prefix-list|route-map NAME in|out) and route maps on redistribution
// are read, route maps as far as their lines match prefix lists and
// standard community lists and set communities (see Config.Apply: an
// entry that matches on anything else may go either way); distribute and
// filter lists are not, nor BGP's rule that a route learned from an iBGP
// peer is not passed to another, nor best-path selection: Learn may say a
// router learns more than it does, never less (but for a protocol it
// does not read, which makes it All).
func Learn(routers []Router) *Learned {
	l := &Learned{known: map[string]map[string]map[Route]origins{}, origins: map[netip.Prefix][]string{}, protocols: map[string][]string{}, routers: routers}
	for _, r := range routers {
		if r.Config.All {
			l.All, l.Why = true, r.Name+": "+r.Config.Why
			return l
		}
		l.originate(r)
	}
	groups, sessions := adjacencies(routers)
	for l.spread(routers, groups, sessions) {
	}
	return l
}

// origins is the set of routers a route comes from.
type origins map[string]bool

// originate records what router r's protocols announce of their own.
func (l *Learned) originate(r Router) {
	l.known[r.Name] = map[string]map[Route]origins{}
	for _, p := range r.Config.Protocols {
		l.protocols[r.Name] = append(l.protocols[r.Name], p.Name)
		for _, pr := range p.Originates(r.Addrs) {
			l.add(r.Name, p.Name, Route{Prefix: pr}, origins{r.Name: true})
			if p.ConnectedMap != "" && p.Name == "bgp" {
				// what redistribute connected's map sets, besides the
				// route as it is: Learn may say more, never less
				for _, m := range r.Config.Apply(p.ConnectedMap, Route{Prefix: pr}) {
					l.add(r.Name, p.Name, m, origins{r.Name: true})
				}
			}
			who := r.Name + " in " + p.Name
			if !slices.Contains(l.origins[pr], who) {
				l.origins[pr] = append(l.origins[pr], who)
			}
		}
	}
}

// spread carries what each router knows one step further: over each BGP
// session its filters let through, across each group of an interior
// protocol, and into each protocol of a router that redistributes
// another. It reports whether anything was new.
func (l *Learned) spread(routers []Router, groups map[string][][]string, sessions []session) bool {
	changed := false
	for _, e := range sessions {
		changed = l.overSession(e) || changed
	}
	for proto, parts := range groups {
		for _, part := range parts {
			changed = l.acrossGroup(proto, part) || changed
		}
	}
	for _, r := range routers {
		changed = l.redistributed(r) || changed
	}
	return changed
}

// overSession carries what e.from's BGP knows to e.to's, through the
// prefix lists and route maps out and in.
func (l *Learned) overSession(e session) bool {
	changed := false
	for r, from := range l.known[e.from.Name]["bgp"] {
		if !e.from.Config.Passes(e.out, r.Prefix) {
			continue
		}
		for _, sent := range e.from.Config.Apply(e.outMap, r) {
			if !e.to.Config.Passes(e.in, sent.Prefix) {
				continue
			}
			for _, taken := range e.to.Config.Apply(e.inMap, sent) {
				changed = l.add(e.to.Name, "bgp", taken, from) || changed
			}
		}
	}
	return changed
}

// acrossGroup gives every router of part (routers that exchange proto's
// routes) what any of them knows by proto.
func (l *Learned) acrossGroup(proto string, part []string) bool {
	union := map[Route]origins{}
	for _, name := range part {
		for pr, from := range l.known[name][proto] {
			if union[pr] == nil {
				union[pr] = origins{}
			}
			for o := range from {
				union[pr][o] = true
			}
		}
	}
	changed := false
	for _, name := range part {
		for pr, from := range union {
			changed = l.add(name, proto, pr, from) || changed
		}
	}
	return changed
}

// redistributed takes into each of router r's protocols what another of
// its protocols knows where it redistributes that one, through the
// redistribution's route map.
func (l *Learned) redistributed(r Router) bool {
	changed := false
	for _, p := range r.Config.Protocols {
		for _, from := range p.From {
			for rt, o := range l.known[r.Name][from] {
				for _, in := range r.Config.Apply(p.FromMap[from], rt) {
					if p.Name != "bgp" {
						in.Communities = "" // only BGP carries them
					}
					changed = l.add(r.Name, p.Name, in, o) || changed
				}
			}
		}
	}
	return changed
}

// add records that router knows pr by proto, from the routers in from,
// reporting whether any is new.
func (l *Learned) add(router, proto string, pr Route, from origins) bool {
	set := l.known[router][proto]
	if set == nil {
		set = map[Route]origins{}
		l.known[router][proto] = set
	}
	have := set[pr]
	if have == nil {
		have = origins{}
		set[pr] = have
	}
	changed := false
	for o := range from {
		if !have[o] {
			have[o], changed = true, true
		}
	}
	return changed
}

// A session is one direction of a BGP session: the routes from's BGP
// knows pass to to's through from's prefix list and route map out and
// to's in ("": none).
type session struct {
	from, to      *Router
	out, in       string
	outMap, inMap string
}

// adjacencies are, by interior protocol, the groups of routers that
// exchange its routes (connected components of who speaks it with whom),
// and BGP's sessions, each way.
func adjacencies(routers []Router) (map[string][][]string, []session) {
	edges := map[string][][2]string{}
	var sessions []session
	for i := range routers {
		a := &routers[i]
		for j := i + 1; j < len(routers); j++ {
			b := &routers[j]
			for _, pa := range a.Config.Protocols {
				pb := b.Config.find(pa.Name)
				switch {
				case pb == nil || !speaks(pa, *a, pb, *b):
				case pa.Name == "bgp":
					na, nb := named(pa, *b), named(pb, *a) // b's address a names, a's that b names
					sessions = append(sessions,
						session{from: a, to: b, out: pa.Out[na], in: pb.In[nb], outMap: pa.OutMap[na], inMap: pb.InMap[nb]},
						session{from: b, to: a, out: pb.Out[nb], in: pa.In[na], outMap: pb.OutMap[nb], inMap: pa.InMap[na]})
				default:
					edges[pa.Name] = append(edges[pa.Name], [2]string{a.Name, b.Name})
				}
			}
		}
	}
	out := map[string][][]string{}
	for proto, es := range edges {
		parent := map[string]string{}
		var find func(string) string
		find = func(x string) string {
			if p, ok := parent[x]; ok && p != x {
				parent[x] = find(p)
				return parent[x]
			}
			parent[x] = x
			return x
		}
		for _, e := range es {
			parent[find(e[0])] = find(e[1])
		}
		parts := map[string][]string{}
		for x := range parent {
			parts[find(x)] = append(parts[find(x)], x)
		}
		for _, part := range parts {
			out[proto] = append(out[proto], part)
		}
	}
	return out, sessions
}

// named is the address of r's that BGP p names as a neighbour (invalid
// when it names none of them, as with a neighbour named by interface).
func named(p *Protocol, r Router) netip.Addr {
	for _, x := range r.Addrs {
		if slices.Contains(p.Neighbors, x.Prefix.Addr()) {
			return x.Prefix.Addr()
		}
	}
	return netip.Addr{}
}

// speaks reports whether routers a and b exchange routes of protocol pa
// (a's) and pb (b's).
func speaks(pa *Protocol, a Router, pb *Protocol, b Router) bool {
	if pa.Name == "bgp" {
		return names(pa, a, b) && names(pb, b, a)
	}
	return shareSubnet(a, b, func(x, y Address) bool { return pa.Runs(x) && pb.Runs(y) })
}

// shareSubnet reports whether routers a and b have addresses x and y on
// one subnet (not a host route) for which both(x, y) holds.
func shareSubnet(a, b Router, both func(x, y Address) bool) bool {
	for _, x := range a.Addrs {
		for _, y := range b.Addrs {
			if x.Prefix.Masked() == y.Prefix.Masked() && x.Prefix.Bits() < x.Prefix.Addr().BitLen() && both(x, y) {
				return true
			}
		}
	}
	return false
}

// names reports whether BGP p, of router self, names router r as a
// neighbour: by one of r's addresses, or, with a neighbour named
// otherwise (an interface, a peer group), when r shares a subnet with
// self.
func names(p *Protocol, self, r Router) bool {
	for _, x := range r.Addrs {
		if slices.Contains(p.Neighbors, x.Prefix.Addr()) {
			return true
		}
	}
	return p.AnyNeighbor && shareSubnet(self, r, func(Address, Address) bool { return true })
}

// Learns reports whether router can learn a route to dst, and when it
// cannot, says why: who announces dst, and that none of router's
// protocols is brought it.
func (l *Learned) Learns(router string, dst netip.Addr) (bool, string) {
	if l.All {
		return true, ""
	}
	for _, prs := range l.known[router] {
		for r, from := range prs {
			if r.Prefix.Contains(dst) && (len(from) > 1 || !from[router]) {
				return true, ""
			}
		}
	}
	var who []string
	for pr, origins := range l.origins {
		if pr.Contains(dst) && pr.Bits() > 0 {
			who = append(who, fmt.Sprintf("%s by %s", pr, strings.Join(origins, ", ")))
		}
	}
	sort.Strings(who)
	if len(who) == 0 {
		var holders []string
		for _, r := range l.routers {
			for _, x := range r.Addrs {
				if x.Prefix.Masked().Contains(dst) {
					holders = append(holders, fmt.Sprintf("%s has it on %s (%s)", r.Name, x.Interface, x.Prefix))
				}
			}
		}
		if len(holders) == 0 {
			return false, "no routing configuration of the lab announces it"
		}
		return false, "no routing configuration of the lab announces it: " + strings.Join(holders, ", ") + ", and no network statement, interface line or redistribute connected of its takes it into a protocol"
	}
	protos := slices.Clone(l.protocols[router])
	sort.Strings(protos)
	return false, fmt.Sprintf("it is announced (%s), but no protocol of %s's (%s) is brought it: none reaches it there, and no redistribute carries it across", strings.Join(who, "; "), router, strings.Join(protos, ", "))
}
