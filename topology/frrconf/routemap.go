package frrconf

import (
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Route is a route as Learn follows it: its prefix and, for BGP, the
// communities it carries ("" none; Unknown: nslab cannot tell).
type Route struct {
	Prefix      netip.Prefix
	Communities string // sorted, space-separated
}

// Unknown is the communities of a route whose communities nslab cannot
// tell (a route map set them in a way it does not read): every match on
// them may go either way.
const Unknown = "?"

// RouteMap is a route map's entries, in the order FRR applies them.
type RouteMap []*MapEntry

// MapEntry is one entry of a route map (route-map NAME permit|deny SEQ)
// and what nslab reads of its lines.
type MapEntry struct {
	Permit bool
	Seq    int
	// PrefixLists the route's prefix must pass (match ip address
	// prefix-list, match ipv6 address prefix-list).
	PrefixLists []string
	// CommunityLists one of whose lines must let the route's
	// communities through (match community).
	CommunityLists []string
	// Unread: a match line nslab does not read (a next hop, an AS path,
	// a tag, ...): the entry may or may not match.
	Unread bool
	// Set is the communities set community gives (nil: none; Additive:
	// added to the route's), SetUnknown a set nslab does not read that
	// changes them (comm-list delete).
	Set        []string
	Additive   bool
	SetUnknown bool
}

// CommunityRule is one line of a standard community list: it permits or
// denies the routes that carry every community of Communities.
type CommunityRule struct {
	Permit      bool
	Communities []string
	Ordered     int
}

// routeMapLine starts a route map's entry: "route-map NAME permit|deny
// SEQ". It returns the entry the lines after it are read into (nil: a
// line nslab does not read).
func (c *Config) routeMapLine(f []string) *MapEntry {
	if len(f) < 3 || f[2] != "permit" && f[2] != "deny" {
		return nil
	}
	e := &MapEntry{Permit: f[2] == "permit", Seq: len(c.RouteMaps[f[1]])*10 + 10}
	if len(f) > 3 {
		if n, err := strconv.Atoi(f[3]); err == nil {
			e.Seq = n
		}
	}
	if c.RouteMaps == nil {
		c.RouteMaps = map[string]RouteMap{}
	}
	m := append(c.RouteMaps[f[1]], e)
	slices.SortStableFunc(m, func(a, b *MapEntry) int { return a.Seq - b.Seq })
	c.RouteMaps[f[1]] = m
	return e
}

// line reads a line of the entry's block.
func (e *MapEntry) line(f []string) {
	joined := strings.Join(f, " ")
	switch {
	case (strings.HasPrefix(joined, "match ip address prefix-list ") || strings.HasPrefix(joined, "match ipv6 address prefix-list ")) && len(f) == 5:
		e.PrefixLists = append(e.PrefixLists, f[4])
	case strings.HasPrefix(joined, "match community ") && len(f) == 3:
		e.CommunityLists = append(e.CommunityLists, f[2])
	case f[0] == "match":
		e.Unread = true
	case joined == "set community none":
		e.Set, e.Additive = []string{}, false
	case strings.HasPrefix(joined, "set community ") && len(f) > 2:
		e.Set = f[2:]
		if f[len(f)-1] == "additive" {
			e.Set, e.Additive = f[2:len(f)-1], true
		}
	case f[0] == "set" && len(f) > 1 && (f[1] == "comm-list" || f[1] == "large-community" || f[1] == "extcommunity"):
		// what nslab does not follow; large and extended communities
		// are not matched either
		e.SetUnknown = e.SetUnknown || f[1] == "comm-list"
	case f[0] == "call" || f[0] == "on-match" || f[0] == "continue":
		e.Unread = true // the entry's outcome depends on another's
	}
}

// communityListLine reads "bgp community-list [standard] NAME [seq N]
// permit|deny COMMUNITY..." (and ip community-list, as older releases
// write it); an expanded list (regular expressions) is left unread, so
// that matching on it may go either way.
func (c *Config) communityListLine(f []string) {
	i := 2 // after "bgp community-list" / "ip community-list"
	if i < len(f) && f[i] == "standard" {
		i++
	} else if i < len(f) && f[i] == "expanded" {
		return
	}
	if i >= len(f) {
		return
	}
	name := f[i]
	i++
	r := CommunityRule{Ordered: len(c.CommunityLists[name])*5 + 5}
	if i+1 < len(f) && f[i] == "seq" {
		if n, err := strconv.Atoi(f[i+1]); err == nil {
			r.Ordered = n
		}
		i += 2
	}
	if i >= len(f) || f[i] != "permit" && f[i] != "deny" {
		return
	}
	r.Permit = f[i] == "permit"
	r.Communities = f[i+1:]
	if c.CommunityLists == nil {
		c.CommunityLists = map[string][]CommunityRule{}
	}
	rules := append(c.CommunityLists[name], r)
	slices.SortStableFunc(rules, func(a, b CommunityRule) int { return a.Ordered - b.Ordered })
	c.CommunityLists[name] = rules
}

// match is what nslab can tell of whether a route matches: yes, no, or
// either.
type match int

const (
	no match = iota
	yes
	either
)

// and is the match of two lines that must both match.
func (m match) and(o match) match {
	switch {
	case m == no || o == no:
		return no
	case m == either || o == either:
		return either
	}
	return yes
}

// Apply is what route map name does to route r, as far as nslab can
// tell: the routes that may come out (none: r is denied; two or more:
// entries nslab cannot decide may each take it). Entries apply in order,
// the first that matches decides, and a route none matches is denied, as
// FRR does. No map (""), or a map the configuration does not define, lets
// r through unchanged (what nslab cannot bound it takes as carried).
func (c Config) Apply(name string, r Route) []Route {
	m, ok := c.RouteMaps[name]
	if name == "" || !ok {
		return []Route{r}
	}
	var out []Route
	for _, e := range m {
		got := c.matches(e, r)
		if got == no {
			continue
		}
		if e.Permit {
			out = appendRoute(out, e.apply(r))
		}
		if got == yes {
			return out
		}
	}
	return out
}

// matches is whether entry e matches route r.
func (c Config) matches(e *MapEntry, r Route) match {
	m := yes
	if e.Unread {
		m = either
	}
	for _, pl := range e.PrefixLists {
		switch _, defined := c.PrefixLists[pl]; {
		case !defined:
			m = m.and(either)
		case c.Passes(pl, r.Prefix):
		default:
			m = no
		}
	}
	for _, cl := range e.CommunityLists {
		m = m.and(c.communityMatch(cl, r.Communities))
	}
	return m
}

// communityMatch is whether community list name lets a route with
// communities through: the first line whose communities the route all
// carries decides; none denies.
func (c Config) communityMatch(name, communities string) match {
	rules, ok := c.CommunityLists[name]
	if !ok || communities == Unknown {
		return either
	}
	have := strings.Fields(communities)
	for _, r := range rules {
		all := true
		for _, x := range r.Communities {
			all = all && slices.Contains(have, x)
		}
		if all {
			if r.Permit {
				return yes
			}
			return no
		}
	}
	return no
}

// apply is r with the entry's sets done.
func (e *MapEntry) apply(r Route) Route {
	switch {
	case e.SetUnknown:
		r.Communities = Unknown
	case e.Set != nil && e.Additive && r.Communities != Unknown:
		r.Communities = communities(append(strings.Fields(r.Communities), e.Set...))
	case e.Set != nil && !e.Additive:
		r.Communities = communities(e.Set)
	}
	return r
}

// communities is the canonical text of a set of communities: sorted,
// each once.
func communities(list []string) string {
	sort.Strings(list)
	return strings.Join(slices.Compact(list), " ")
}

// appendRoute appends r to out unless it is there.
func appendRoute(out []Route, r Route) []Route {
	if slices.Contains(out, r) {
		return out
	}
	return append(out, r)
}
