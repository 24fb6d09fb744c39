package generate

import (
	"fmt"
	"net/netip"
)

// chain: n0 - n1 - ... ; link k joins nk:r (.1) and nk+1:l (.2). With
// routes, a node routes by default to its right neighbour (the last one
// to its left), and the links left of its left neighbour's link through
// its left neighbour, in a few prefixes.
func chain(o Options) *lab {
	g := newLab()
	name := func(i int) string { return fmt.Sprintf("n%d", i) }
	g.node(name(0))
	var right, left []netip.Addr // right[i]: n(i+1)'s address on link i; left[i]: n(i)'s
	for k := 0; k+1 < o.N; k++ {
		x, y := g.connect(name(k), "r", name(k+1), "l")
		left, right = append(left, x), append(right, y)
	}
	if !o.Routes {
		return g
	}
	for i := 0; i < o.N; i++ {
		n := g.node(name(i))
		n.forward = i > 0 && i < o.N-1
		if i < o.N-1 {
			n.routes = append(n.routes, route{via: right[i]})
		} else if i > 0 {
			n.routes = append(n.routes, route{via: left[i-1]})
			continue
		}
		if i > 1 {
			for _, p := range linkRange(0, i-1) {
				n.routes = append(n.routes, route{to: p, via: left[i-1]})
			}
		}
	}
	return g
}

// star: hub with leaves l0..; link k joins hub:eK (.1) and lK:e0 (.2).
// With routes, leaves route by default to the hub, which forwards.
func star(o Options) *lab {
	g := newLab()
	g.node("hub")
	for k := 0; k < o.N; k++ {
		x, _ := g.connect("hub", fmt.Sprintf("e%d", k), fmt.Sprintf("l%d", k), "e0")
		if o.Routes {
			g.node(fmt.Sprintf("l%d", k)).routes = []route{{via: x}}
		}
	}
	g.node("hub").forward = o.Routes && o.N > 1
	return g
}

// tree: a binary tree t0..; t(i)'s children are t(2i+1) and t(2i+2).
// Links are numbered in depth-first order, so each subtree's links are
// consecutive: with routes, a node routes each child's subtree through
// that child, and everything else to its parent.
func tree(o Options) *lab {
	g := newLab()
	name := func(i int) string { return fmt.Sprintf("t%d", i) }
	size := make([]int, o.N) // nodes in each subtree
	for i := o.N - 1; i >= 0; i-- {
		size[i] = 1
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < o.N {
				size[i] += size[c]
			}
		}
	}
	var visit func(i int)
	visit = func(i int) {
		g.node(name(i))
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c >= o.N {
				continue
			}
			first := len(g.links) // this child's link, then its subtree's
			x, y := g.connect(name(i), fmt.Sprintf("c%d", c), name(c), "up")
			if o.Routes {
				g.node(name(c)).routes = append(g.node(name(c)).routes, route{via: x})
				for _, p := range linkRange(first+1, first+size[c]) {
					g.node(name(i)).routes = append(g.node(name(i)).routes, route{to: p, via: y})
				}
				g.node(name(i)).forward = true
			}
			visit(c)
		}
	}
	visit(0)
	return g
}

// mesh: every pair of m0.. joined; link (i, j), i < j, joins mi:pJ (.1)
// and mj:pI (.2). With routes, a node routes each link it is not on
// through one end of that link, its neighbour.
func mesh(o Options) *lab {
	g := newLab()
	name := func(i int) string { return fmt.Sprintf("m%d", i) }
	addr := map[[2]int]netip.Addr{} // (node, peer) -> node's address on their link
	type pair struct{ a, b, k int }
	var pairs []pair
	for i := 0; i < o.N; i++ {
		g.node(name(i))
	}
	for i := 0; i < o.N; i++ {
		for j := i + 1; j < o.N; j++ {
			pairs = append(pairs, pair{i, j, len(g.links)})
			addr[[2]int{i, j}], addr[[2]int{j, i}] = g.connect(name(i), fmt.Sprintf("p%d", j), name(j), fmt.Sprintf("p%d", i))
		}
	}
	if !o.Routes {
		return g
	}
	for i := 0; i < o.N; i++ {
		n := g.node(name(i))
		n.forward = o.N > 2
		for _, p := range pairs {
			if p.a == i || p.b == i {
				continue
			}
			n.routes = append(n.routes, route{to: linkRange(p.k, p.k+1)[0], via: addr[[2]int{p.a, i}]})
		}
	}
	return g
}

// clos: spines s0.. and leaves l0..; link (spine s, leaf l) joins sS:lL
// (.1) and lL:sS (.2). With routes, leaves route by default through spine
// 0, and each spine routes every other spine's links through the leaf at
// their other end; every node forwards.
func clos(o Options) *lab {
	g := newLab()
	leafAddr := map[[2]int]netip.Addr{}  // (spine, leaf) -> leaf's address on their link
	spineAddr := map[[2]int]netip.Addr{} // (spine, leaf) -> spine's address
	for s := 0; s < o.Spines; s++ {
		g.node(fmt.Sprintf("s%d", s))
	}
	for s := 0; s < o.Spines; s++ {
		for l := 0; l < o.N; l++ {
			spineAddr[[2]int{s, l}], leafAddr[[2]int{s, l}] = g.connect(fmt.Sprintf("s%d", s), fmt.Sprintf("l%d", l), fmt.Sprintf("l%d", l), fmt.Sprintf("s%d", s))
		}
	}
	if !o.Routes {
		return g
	}
	for l := 0; l < o.N; l++ {
		n := g.node(fmt.Sprintf("l%d", l))
		n.forward, n.routes = o.Spines > 1, []route{{via: spineAddr[[2]int{0, l}]}}
	}
	for s := 0; s < o.Spines; s++ {
		n := g.node(fmt.Sprintf("s%d", s))
		n.forward = true
		for t := 0; t < o.Spines; t++ {
			for l := 0; l < o.N && t != s; l++ {
				k := t*o.N + l
				n.routes = append(n.routes, route{to: linkRange(k, k+1)[0], via: leafAddr[[2]int{s, l}]})
			}
		}
	}
	return g
}
