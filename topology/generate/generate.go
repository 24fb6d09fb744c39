// Package generate writes ordinary lab files of common shapes (chain,
// star, tree, mesh, clos) of any size, for teaching and for scale tests
// (nslab generate). It is pure: it writes YAML text, which spec.Parse
// reads like any lab file.
//
// Every link k gets its own /30 out of 10.0.0.0/8, in order: 10.0.0.0/30,
// 10.0.0.4/30, ...; its first end has .1, its second .2. With Routes, the
// nodes get the routes (and forwarding) that make every address reachable
// from every node, with few routes per node where the shape allows: the
// links of a chain's left side and of a tree's subtree are numbered
// consecutively, so that a few prefixes cover them.
package generate

import (
	"fmt"
	"net/netip"
	"strings"
)

// Kinds are the shapes Lab writes.
var Kinds = []string{"chain", "star", "tree", "mesh", "clos"}

// Options shape a lab.
type Options struct {
	Kind   string
	N      int  // nodes (chain, tree, mesh), leaves (star, clos)
	Spines int  // clos: spine nodes (default 2)
	Routes bool // routes and forwarding for full reachability
	// Routing is a routing protocol every node runs instead ("ospf":
	// FRR's ospfd on every link, with forwarding and no static route);
	// "": none.
	Routing string
	Name    string // lab name; default: the kind
	// Origin is what made the file (a command line), written as its
	// first comment; "": none.
	Origin string
}

// Routings are the protocols Options.Routing takes.
var Routings = []string{"ospf"}

// MaxLinks bounds a generated lab: each link needs a /30 of 10.0.0.0/8.
const MaxLinks = 1 << 22

// MaxMesh bounds a full mesh: its links grow with the square of its nodes
// and, with routes, every node routes every link it is not on.
const MaxMesh = 64

// Lab writes the lab the options describe.
func Lab(o Options) (string, error) {
	if o.Name == "" {
		o.Name = o.Kind
	}
	if o.Spines == 0 {
		o.Spines = 2
	}
	if o.N < 1 {
		return "", fmt.Errorf("%d nodes: give at least 1", o.N)
	}
	switch {
	case o.Routing != "" && o.Routing != "ospf":
		return "", fmt.Errorf("routing %q: one of %s", o.Routing, strings.Join(Routings, ", "))
	case o.Routing != "" && o.Routes:
		return "", fmt.Errorf("static routes or a routing protocol: give one")
	}
	var g *lab
	switch o.Kind {
	case "chain":
		g = chain(o)
	case "star":
		g = star(o)
	case "tree":
		g = tree(o)
	case "mesh":
		if o.N > MaxMesh {
			return "", fmt.Errorf("a mesh of %d nodes has %d links: at most %d nodes", o.N, o.N*(o.N-1)/2, MaxMesh)
		}
		g = mesh(o)
	case "clos":
		g = clos(o)
	default:
		return "", fmt.Errorf("unknown shape %q: one of %s", o.Kind, strings.Join(Kinds, ", "))
	}
	if len(g.links) > MaxLinks {
		return "", fmt.Errorf("%d links: at most %d (each takes a /30 of 10.0.0.0/8)", len(g.links), MaxLinks)
	}
	return g.yaml(o), nil
}

// lab is a generated lab before it is written: nodes in order, each with
// its interfaces, routes and forwarding, and the links.
type lab struct {
	nodes  []*node
	byName map[string]*node
	links  []link
}

type node struct {
	name    string
	forward bool
	ifaces  []iface
	routes  []route
}

type iface struct {
	name string
	addr netip.Addr
}

type route struct {
	to  netip.Prefix // invalid: default
	via netip.Addr
}

type link struct{ a, b string } // node:iface

func newLab() *lab { return &lab{byName: map[string]*node{}} }

func (g *lab) node(name string) *node {
	n := g.byName[name]
	if n == nil {
		n = &node{name: name}
		g.nodes = append(g.nodes, n)
		g.byName[name] = n
	}
	return n
}

// connect adds link number len(links) between a:ai (.1) and b:bi (.2)
// and returns the two addresses.
func (g *lab) connect(a, ai, b, bi string) (netip.Addr, netip.Addr) {
	k := len(g.links)
	g.links = append(g.links, link{a + ":" + ai, b + ":" + bi})
	x, y := linkAddr(k, 1), linkAddr(k, 2)
	g.node(a).ifaces = append(g.node(a).ifaces, iface{ai, x})
	g.node(b).ifaces = append(g.node(b).ifaces, iface{bi, y})
	return x, y
}

// linkAddr is host h (1 or 2) of link k's /30.
func linkAddr(k, h int) netip.Addr {
	v := uint32(10)<<24 | uint32(k)<<2 | uint32(h)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// linkRange is the fewest prefixes that cover links [from, to).
func linkRange(from, to int) []netip.Prefix {
	var out []netip.Prefix
	lo, hi := uint32(from)<<2, uint32(to)<<2 // offsets in 10.0.0.0/8
	for lo < hi {
		size := lo & -lo
		if lo == 0 {
			size = 1 << 22
		}
		for size > hi-lo {
			size >>= 1
		}
		bits := 32
		for s := size; s > 1; s >>= 1 {
			bits--
		}
		v := uint32(10)<<24 | lo
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits))
		lo += size
	}
	return out
}

// yaml writes the lab file.
func (g *lab) yaml(o Options) string {
	var b strings.Builder
	if o.Origin != "" {
		fmt.Fprintf(&b, "# %s\n", o.Origin)
	}
	fmt.Fprintf(&b, "name: %s\nnodes:\n", o.Name)
	for _, n := range g.nodes {
		fmt.Fprintf(&b, "  %s:\n", n.name)
		if n.forward || o.Routing != "" {
			b.WriteString("    forwarding: {ipv4: true}\n")
		}
		if o.Routing == "ospf" {
			b.WriteString(ospfNode)
		}
		if len(n.ifaces) > 0 {
			b.WriteString("    interfaces:\n")
			for _, i := range n.ifaces {
				fmt.Fprintf(&b, "      %s: {addresses: [%s/30]}\n", i.name, i.addr)
			}
		}
		if len(n.routes) > 0 {
			b.WriteString("    routes:\n")
			for _, r := range n.routes {
				to := "default"
				if r.to.IsValid() {
					to = r.to.String()
				}
				fmt.Fprintf(&b, "      - {to: %s, via: %s}\n", to, r.via)
			}
		}
	}
	if len(g.links) > 0 {
		b.WriteString("links:\n")
		for _, l := range g.links {
			fmt.Fprintf(&b, "  - endpoints: [%s, %s]\n", l.a, l.b)
		}
	}
	return b.String()
}

// ospfNode is the frr: entry of every node of a lab generated with
// --routing ospf: one template, rendered per node by nslab (its links,
// their networks, its router ID). Hello 1 s, dead 3 s, retransmit 1 s,
// SPF and LSA throttles of 0/50/500 ms and 50 ms: a lab converges in a
// few seconds (see examples/ospf-ring.yaml).
const ospfNode = `    frr:
      daemons: [ospfd]
      config: |
        frr defaults traditional
        hostname {{.Hostname}}
        log file /var/log/frr/frr.log informational
        {{- range .Interfaces}}{{if .Peer}}
        interface {{.Name}}
         ip ospf network point-to-point
         ip ospf hello-interval 1
         ip ospf dead-interval 3
         ip ospf retransmit-interval 1
        {{- end}}{{end}}
        router ospf
         ospf router-id {{.RouterID}}
         timers throttle spf 0 50 500
         timers throttle lsa all 50
         timers lsa min-arrival 50
        {{- range .Interfaces}}{{range .Addresses}}
         network {{.Network}} area 0
        {{- end}}{{end}}
`
