package graph

import (
	"fmt"
	"html"
	"slices"
	"strings"
)

// SVG geometry, in pixels.
const (
	svgBoxW   = 260 // a box's width
	svgColGap = 190 // between columns: room for a link's labels and drop badges
	svgRowH   = 16  // a row of text
	svgHeadH  = 38  // a box's title and note
	svgBoxGap = 30  // between boxes of a column
	svgMargin = 20
)

// SVG draws the graph as an SVG picture for the web view: boxes in
// columns by their distance along the lab (as Text lays them out), each
// box placed so that its link to the column before it is straight where
// the column leaves room, with its title, note and interface rows (not
// its routes), and each edge as a line between its two interface rows.
// The live view finds what to update by id and data attributes: a box is
// <g id="node-ID" data-node="NODE"> with a badge for its IP layer's
// discards, "discard-ID"; an edge's line "link-N", its labels "label-N"
// (A to B, above the line) and "label-N-ba" (B to A, below it), and a
// badge at each end for the packets dropped there, "drop-N-a" and
// "drop-N-b", with data-a and data-b naming its ends as NODE:IF (N is the
// edge's index in g.Edges).
func SVG(g *Graph) string {
	pos, w, h := svgLayout(g)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="lab" viewBox="0 0 %d %d" width="%d" height="%d" font-family="monospace" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString("lab "+g.Lab))
	for i, e := range g.Edges {
		svgEdge(&b, g, pos, i, e)
	}
	for i, box := range g.Boxes {
		svgBox(&b, box, pos[i])
	}
	for i, e := range g.Edges {
		svgDrops(&b, g, pos, i, e)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// point is a box's top left corner.
type point struct{ x, y int }

// svgLayout places the boxes: a column per layer, the columns left to
// right, each box of a column below the one before it. A box with a link
// to a box of the column before is placed so that the link's two rows
// are level (a straight line), unless that would overlap the box above
// it. It returns their corners and the picture's size.
func svgLayout(g *Graph) ([]point, int, int) {
	layer := g.layers()
	order := make([]int, len(g.Boxes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return layer[i] - layer[j] })
	ends := make([][][2]End, len(g.Boxes)) // each box's edges: its end, the other, in the edges' order
	for _, e := range g.Edges {
		ends[e.A.Box] = append(ends[e.A.Box], [2]End{e.A, e.B})
		ends[e.B.Box] = append(ends[e.B.Box], [2]End{e.B, e.A})
	}
	pos := make([]point, len(g.Boxes))
	placed := make([]bool, len(g.Boxes))
	next := map[int]int{} // layer -> y below its last box
	for _, i := range order {
		y, ok := next[layer[i]]
		if !ok {
			y = svgMargin
		}
		if level, ok := levelWith(g, ends[i], layer, pos, placed, i); ok && level > y {
			y = level
		}
		pos[i], placed[i] = point{svgMargin + layer[i]*(svgBoxW+svgColGap), y}, true
		next[layer[i]] = y + svgBoxHeight(g.Boxes[i]) + svgBoxGap
	}
	w, h := 0, 0
	for i, box := range g.Boxes {
		w, h = max(w, pos[i].x+svgBoxW+svgMargin), max(h, pos[i].y+svgBoxHeight(box)+svgMargin)
	}
	return pos, w, h
}

// levelWith is the y at which box i's row linked to a placed box of the
// column before is level with that box's row (the first such of its
// edges, ends: box i's end and the other of each).
func levelWith(g *Graph, ends [][2]End, layer []int, pos []point, placed []bool, i int) (int, bool) {
	for _, e := range ends {
		mine, other := e[0], e[1]
		if !placed[other.Box] || layer[other.Box] != layer[i]-1 {
			continue
		}
		return rowY(g.Boxes[other.Box], pos[other.Box], other.Row) - rowY(g.Boxes[i], point{}, mine.Row), true
	}
	return 0, false
}

// svgRows are the rows a box shows: all but its routes.
func svgRows(b *Box) []Row {
	var out []Row
	for _, r := range b.Rows {
		if !r.Route {
			out = append(out, r)
		}
	}
	return out
}

func svgBoxHeight(b *Box) int { return svgHeadH + len(svgRows(b))*svgRowH + 6 }

// rowY is the middle of row r of box b, placed at p (routes skipped).
func rowY(b *Box, p point, r int) int {
	shown := 0
	for i := 0; i < r; i++ {
		if !b.Rows[i].Route {
			shown++
		}
	}
	return p.y + svgHeadH + shown*svgRowH + svgRowH/2
}

// svgBox draws one box.
func svgBox(b *strings.Builder, box *Box, p point) {
	class := "node"
	if box.Router {
		class += " router"
	}
	fmt.Fprintf(b, `<g id="node-%s" class="%s" data-node="%s">`+"\n", html.EscapeString(box.ID), class, html.EscapeString(box.ID))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="#ffffff" stroke="#444"/>`+"\n", p.x, p.y, svgBoxW, svgBoxHeight(box))
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold" font-size="14">%s</text>`+"\n", p.x+8, p.y+16, html.EscapeString(box.Title))
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555" class="note">%s</text>`+"\n", p.x+8, p.y+31, html.EscapeString(clip(box.Note, 36)))
	for i, r := range svgRows(box) {
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", p.x+8, p.y+svgHeadH+i*svgRowH+12, html.EscapeString(clip(r.Text, 36)))
	}
	// the IP layer's discards in the node, hidden until there are some
	fmt.Fprintf(b, `<text id="discard-%s" class="discard" x="%d" y="%d" text-anchor="end" fill="#b00" font-weight="bold" visibility="hidden"></text>`+"\n",
		html.EscapeString(box.ID), p.x+svgBoxW-8, p.y+16)
	b.WriteString("</g>\n")
}

// svgEdge draws edge i: a line between its rows' sides that face each
// other, and its rate labels, A to B above the line and B to A below.
func svgEdge(b *strings.Builder, g *Graph, pos []point, i int, e Edge) {
	ax, ay, zx, zy, same := edgeEnds(g, pos, e)
	ends := edgeData(g, e)
	if same {
		fmt.Fprintf(b, `<path id="link-%d" class="link" %s d="M%d %d C%d %d %d %d %d %d" fill="none" stroke="#888" stroke-width="3"/>`+"\n",
			i, ends, ax, ay, ax+80, ay, zx+80, zy, zx, zy)
	} else {
		fmt.Fprintf(b, `<line id="link-%d" class="link" %s x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888" stroke-width="3"/>`+"\n", i, ends, ax, ay, zx, zy)
	}
	mx, my := (ax+zx)/2, (ay+zy)/2
	if same {
		mx += 60
	}
	fmt.Fprintf(b, `<text id="label-%d" class="label" %s x="%d" y="%d" text-anchor="middle" font-size="12">%s</text>`+"\n", i, ends, mx, my-7, html.EscapeString(clip(e.Label, 40)))
	fmt.Fprintf(b, `<text id="label-%d-ba" class="label" %s x="%d" y="%d" text-anchor="middle" font-size="12"></text>`+"\n", i, ends, mx, my+16)
}

// svgDrops draws edge i's two drop badges, hidden until the live view
// shows a drop at that end: a red disc with the count beside it, just
// off the box's side, the count under it.
func svgDrops(b *strings.Builder, g *Graph, pos []point, i int, e Edge) {
	ax, ay, zx, zy, _ := edgeEnds(g, pos, e)
	ends := edgeData(g, e)
	for _, end := range []struct {
		side string
		x, y int
		out  int // which way is away from the box
	}{{"a", ax, ay, sign(zx - ax)}, {"b", zx, zy, sign(ax - zx)}} {
		if end.out == 0 {
			end.out = 1
		}
		cx := end.x + end.out*14
		anchor := "start"
		if end.out < 0 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<g id="drop-%d-%s" class="drop" %s visibility="hidden"><circle cx="%d" cy="%d" r="9" fill="#d22"/>`+
			`<text x="%d" y="%d" fill="#fff" font-weight="bold" text-anchor="middle">✕</text>`+
			`<text class="count" x="%d" y="%d" fill="#b00" font-weight="bold" text-anchor="%s"></text></g>`+"\n",
			i, end.side, ends, cx, end.y, cx, end.y+4, cx-end.out*4, end.y+32, anchor) // below the B-to-A label's line
	}
}

// edgeEnds are where edge e's line meets its boxes, and whether both are
// in one column (the line then rounds their right sides).
func edgeEnds(g *Graph, pos []point, e Edge) (ax, ay, zx, zy int, same bool) {
	a, z := g.Boxes[e.A.Box], g.Boxes[e.B.Box]
	pa, pz := pos[e.A.Box], pos[e.B.Box]
	ax, zx = pa.x+svgBoxW, pz.x
	switch {
	case pa.x > pz.x:
		ax, zx = pa.x, pz.x+svgBoxW
	case pa.x == pz.x:
		ax, zx, same = pa.x+svgBoxW, pz.x+svgBoxW, true
	}
	return ax, rowY(a, pa, e.A.Row), zx, rowY(z, pz, e.B.Row), same
}

// edgeData are edge e's data-a and data-b attributes.
func edgeData(g *Graph, e Edge) string {
	a, z := g.Boxes[e.A.Box], g.Boxes[e.B.Box]
	return fmt.Sprintf(`data-a="%s" data-b="%s"`, html.EscapeString(a.ID+":"+a.Rows[e.A.Row].Port), html.EscapeString(z.ID+":"+z.Rows[e.B.Row].Port))
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// clip shortens s to n runes, with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
