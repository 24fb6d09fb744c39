package graph

import (
	"fmt"
	"html"
	"strings"
)

// SVG geometry, in pixels.
const (
	svgBoxW   = 260 // a box's width
	svgColGap = 190 // between columns: room for a link's label and sparkline
	svgRowH   = 16  // a row of text
	svgHeadH  = 38  // a box's title and note
	svgBoxGap = 30  // between boxes of a column
	svgMargin = 20
)

// SVG draws the graph as an SVG picture for the web view: boxes in
// columns by their distance along the lab (as Text lays them out), each
// box with its title, note and interface rows (not its routes), and each
// edge as a line between its two interface rows. The live view finds
// what to update by id and data attributes: a box is <g id="node-ID"
// data-node="NODE">, an edge's line "link-N", its label "label-N" and its
// sparkline "spark-N", with data-a and data-b naming its ends as
// NODE:IF (N is the edge's index in g.Edges).
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
	b.WriteString("</svg>\n")
	return b.String()
}

// point is a box's top left corner.
type point struct{ x, y int }

// svgLayout places the boxes: a column per layer, boxes stacked in it in
// the file's order. It returns their corners and the picture's size.
func svgLayout(g *Graph) ([]point, int, int) {
	layer := g.layers()
	pos := make([]point, len(g.Boxes))
	next := map[int]int{} // layer -> y of its next box
	w, h := 0, 0
	for i, box := range g.Boxes {
		y, ok := next[layer[i]]
		if !ok {
			y = svgMargin
		}
		pos[i] = point{svgMargin + layer[i]*(svgBoxW+svgColGap), y}
		next[layer[i]] = y + svgBoxHeight(box) + svgBoxGap
		w, h = max(w, pos[i].x+svgBoxW+svgMargin), max(h, next[layer[i]])
	}
	return pos, w, h + svgMargin
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
	b.WriteString("</g>\n")
}

// svgEdge draws edge i: a line between its rows' sides that face each
// other, its label and its sparkline at the middle.
func svgEdge(b *strings.Builder, g *Graph, pos []point, i int, e Edge) {
	a, z := g.Boxes[e.A.Box], g.Boxes[e.B.Box]
	pa, pz := pos[e.A.Box], pos[e.B.Box]
	ax, zx := pa.x+svgBoxW, pz.x
	switch {
	case pa.x > pz.x:
		ax, zx = pa.x, pz.x+svgBoxW
	case pa.x == pz.x: // the same column: round the right side
		ax, zx = pa.x+svgBoxW, pz.x+svgBoxW
	}
	ay, zy := rowY(a, pa, e.A.Row), rowY(z, pz, e.B.Row)
	ends := fmt.Sprintf(`data-a="%s" data-b="%s"`, html.EscapeString(a.ID+":"+a.Rows[e.A.Row].Port), html.EscapeString(z.ID+":"+z.Rows[e.B.Row].Port))
	if pa.x == pz.x {
		fmt.Fprintf(b, `<path id="link-%d" class="link" %s d="M%d %d C%d %d %d %d %d %d" fill="none" stroke="#888" stroke-width="3"/>`+"\n",
			i, ends, ax, ay, ax+80, ay, zx+80, zy, zx, zy)
	} else {
		fmt.Fprintf(b, `<line id="link-%d" class="link" %s x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888" stroke-width="3"/>`+"\n", i, ends, ax, ay, zx, zy)
	}
	mx, my := (ax+zx)/2, (ay+zy)/2
	if pa.x == pz.x {
		mx += 60
	}
	fmt.Fprintf(b, `<text id="label-%d" class="label" %s x="%d" y="%d" text-anchor="middle" font-size="11">%s</text>`+"\n", i, ends, mx, my-8, html.EscapeString(clip(e.Label, 40)))
	fmt.Fprintf(b, `<polyline id="spark-%d" class="spark" %s points="" fill="none" stroke="#2a6" stroke-width="1.5" transform="translate(%d %d)"/>`+"\n", i, ends, mx-50, my+2)
}

// clip shortens s to n runes, with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
