package graph

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Text draws the graph for a terminal with box-drawing characters. Boxes
// stand in columns by their distance from one end of the lab (a chain
// reads left to right, from the end that comes first in the file); links
// run between the rows of their interfaces, straight where the rows line
// up, through their own vertical lane in the gap otherwise. Pieces of the
// lab that are not connected stand one below the other. A chain gets a
// one-line summary underneath.
func Text(g *Graph) string {
	if len(g.Boxes) == 0 {
		return "(empty lab)\n"
	}
	lay := layout(g)
	c := newCanvas(lay.width, lay.height)
	for i, b := range g.Boxes {
		lay.drawBox(c, i, b)
	}
	for _, gap := range lay.gaps {
		for _, e := range gap.straight {
			y := lay.rowY(e.left)
			c.hline(gap.x0, gap.x1, y)
			c.set(gap.x0-1, y, '├')
			c.set(gap.x1+1, y, '┤')
		}
		for i, e := range gap.bent {
			x := gap.x0 + 1 + 2*i
			for _, y := range e.leftRows {
				c.hline(gap.x0, x-1, y)
				c.set(gap.x0-1, y, '├')
			}
			for _, y := range e.rightRows {
				c.hline(x+1, gap.x1, y)
				c.set(gap.x1+1, y, '┤')
			}
			ys := append(append([]int(nil), e.leftRows...), e.rightRows...)
			lo, hi := minMax(ys)
			c.vline(x, lo+1, hi-1)
			c.corner(x, lo, hi, e)
		}
	}
	out := c.String()
	if chain := g.Chain(); chain != nil {
		var parts []string
		for _, i := range chain {
			parts = append(parts, g.Boxes[i].FullTitle())
		}
		out += "\n" + strings.Join(parts, " -> ") + "\n"
	}
	return out + impairedLinks(g)
}

// impairedLinks lists the links whose ends impair what they send (and the
// links between hosts), under the drawing (a terminal drawing has no room
// for labels on its lines).
func impairedLinks(g *Graph) string {
	var lines []string
	for _, e := range g.Edges {
		if e.Label != "" {
			lines = append(lines, "  "+e.Label)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	head := "impaired links"
	for _, e := range g.Edges {
		if strings.Contains(e.Label, ": VXLAN ") {
			head = "links between hosts, and impaired links"
		}
	}
	return "\n" + head + ":\n" + strings.Join(lines, "\n") + "\n"
}

// textLayout places boxes and routes edges.
type textLayout struct {
	g             *Graph
	layer, top    []int // per box
	colX, colW    []int // per layer
	gaps          []*gap
	width, height int
}

// gap is the space right of a column, with the edges that run in it.
type gap struct {
	x0, x1   int // first and last free column of characters
	straight []laidEdge
	bent     []*laidEdge
}

// laidEdge is an edge between column k and k+1 (left and right ends), or
// between two boxes of column k (both ends on the left side of the gap).
type laidEdge struct {
	left, right End
	same        bool
	leftRows    []int // rows where a segment starts at the gap's left side
	rightRows   []int // rows where a segment ends at the gap's right side
}

// layout places the boxes: columns by distance within each piece of the
// lab, rows aligned to the links, then the gaps between columns with a lane
// per bent link.
func layout(g *Graph) *textLayout {
	n := len(g.Boxes)
	lay := &textLayout{g: g, layer: make([]int, n), top: make([]int, n)}
	comps := lay.columns()
	lay.widths(comps)
	y := 0
	for _, layers := range comps {
		y += lay.stack(layers, y)
	}
	lay.height = y - 1
	lay.routeEdges()
	lay.placeGaps()
	return lay
}

// columns splits the lab into its connected pieces and gives each box its
// column: component -> column -> boxes.
func (lay *textLayout) columns() [][][]int {
	n := len(lay.g.Boxes)
	adj := lay.g.neighbours()
	placed := make([]bool, n)
	var comps [][][]int
	for s := 0; s < n; s++ {
		if placed[s] {
			continue
		}
		dist := bfs(adj, chooseStart(adj, s))
		var layers [][]int
		for i := 0; i < n; i++ {
			if d, ok := dist[i]; ok {
				placed[i] = true
				lay.layer[i] = d
				for len(layers) <= d {
					layers = append(layers, nil)
				}
				layers[d] = append(layers[d], i)
			}
		}
		comps = append(comps, layers)
	}
	return comps
}

// widths makes all boxes of a column as wide as its widest.
func (lay *textLayout) widths(comps [][][]int) {
	for _, layers := range comps {
		for k, boxes := range layers {
			for len(lay.colW) <= k {
				lay.colW = append(lay.colW, 0)
			}
			for _, b := range boxes {
				lay.colW[k] = max(lay.colW[k], boxWidth(lay.g.Boxes[b]))
			}
		}
	}
}

// stack places one piece of the lab from row y down and returns its
// height. Tops may go negative while aligning (a port low in its box meets
// a link high in the previous one); the piece then moves down as a whole.
func (lay *textLayout) stack(layers [][]int, y int) int {
	first := true
	lowest, bottom := 0, 0
	for k, boxes := range layers {
		if k > 0 {
			lay.orderByNeighbours(boxes, layers[k-1])
		}
		next, stacked := 0, false
		for _, b := range boxes {
			want := 0
			if k > 0 {
				want = lay.alignTop(b, k-1)
			}
			if stacked {
				want = max(want, next)
			}
			lay.top[b], next, stacked = want, want+boxHeight(lay.g.Boxes[b])+1, true
			if first || want < lowest {
				lowest = want
			}
			if first || next > bottom {
				bottom = next
			}
			first = false
		}
	}
	for _, boxes := range layers {
		for _, b := range boxes {
			lay.top[b] += y - lowest
		}
	}
	return bottom - lowest
}

// routeEdges puts every link into the gap at its left end: straight when
// its rows line up, bent otherwise.
func (lay *textLayout) routeEdges() {
	lay.gaps = make([]*gap, len(lay.colW))
	for k := range lay.gaps {
		lay.gaps[k] = &gap{}
	}
	for _, e := range lay.g.Edges {
		a, b := e.A, e.B
		if lay.layer[a.Box] > lay.layer[b.Box] {
			a, b = b, a
		}
		gp := lay.gaps[lay.layer[a.Box]]
		le := laidEdge{left: a, right: b, same: lay.layer[a.Box] == lay.layer[b.Box]}
		switch {
		case le.same:
			le.leftRows = []int{lay.rowY(a), lay.rowY(b)}
			gp.bent = append(gp.bent, &le)
		case lay.rowY(a) == lay.rowY(b):
			gp.straight = append(gp.straight, le)
		default:
			le.leftRows, le.rightRows = []int{lay.rowY(a)}, []int{lay.rowY(b)}
			gp.bent = append(gp.bent, &le)
		}
	}
}

// placeGaps sizes each gap (a lane per bent link) and positions the
// columns.
func (lay *textLayout) placeGaps() {
	x := 0
	lay.colX = make([]int, len(lay.colW))
	for k, w := range lay.colW {
		lay.colX[k] = x
		gp := lay.gaps[k]
		gp.bent = orderLanes(gp.bent)
		width := 2*len(gp.bent) + 3
		if len(gp.straight)+len(gp.bent) == 0 {
			width = 4
		}
		gp.x0, gp.x1 = x+w, x+w+width-1
		x += w + width
	}
	lay.width = x
}

// layers gives each box its column: its distance from the start of its
// piece of the lab (see chooseStart).
func (g *Graph) layers() []int {
	adj := g.neighbours()
	layer := make([]int, len(g.Boxes))
	placed := make([]bool, len(g.Boxes))
	for s := range g.Boxes {
		if placed[s] {
			continue
		}
		for i, d := range bfs(adj, chooseStart(adj, s)) {
			layer[i], placed[i] = d, true
		}
	}
	return layer
}

// chooseStart picks the end of the longest shortest path through s's
// piece of the lab, the one that comes first in the file.
func chooseStart(adj [][]int, s int) int {
	far := func(from int) []int {
		d := bfs(adj, from)
		best, out := -1, []int(nil)
		for i := range adj {
			if v, ok := d[i]; ok {
				if v > best {
					best, out = v, []int{i}
				} else if v == best {
					out = append(out, i)
				}
			}
		}
		return out
	}
	a := far(s)[0]
	b := far(a)[0]
	return min(a, b)
}

func bfs(adj [][]int, start int) map[int]int {
	dist := map[int]int{start: 0}
	queue := []int{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, n := range adj[cur] {
			if _, seen := dist[n]; !seen {
				dist[n] = dist[cur] + 1
				queue = append(queue, n)
			}
		}
	}
	return dist
}

// orderByNeighbours sorts a layer's boxes by the mean position of their
// neighbours in the previous layer (file order on ties), so lines cross
// less.
func (lay *textLayout) orderByNeighbours(boxes, prev []int) {
	pos := map[int]int{}
	for i, b := range prev {
		pos[b] = i
	}
	key := map[int]float64{}
	for _, b := range boxes {
		sum, cnt := 0, 0
		for _, e := range lay.g.Edges {
			for _, pair := range [][2]int{{e.A.Box, e.B.Box}, {e.B.Box, e.A.Box}} {
				if pair[0] == b {
					if p, ok := pos[pair[1]]; ok {
						sum, cnt = sum+p*1000+lay.rowIndex(e, pair[1]), cnt+1
					}
				}
			}
		}
		if cnt > 0 {
			key[b] = float64(sum) / float64(cnt)
		}
	}
	sort.SliceStable(boxes, func(i, j int) bool {
		if key[boxes[i]] != key[boxes[j]] {
			return key[boxes[i]] < key[boxes[j]]
		}
		return boxes[i] < boxes[j]
	})
}

// rowIndex is the row of edge e at box b.
func (lay *textLayout) rowIndex(e Edge, b int) int {
	if e.A.Box == b {
		return e.A.Row
	}
	return e.B.Row
}

// alignTop is the top that puts box b's first link to column k level with
// the interface it connects to there, so that link is a straight line.
func (lay *textLayout) alignTop(b, k int) int {
	best, found := 0, false
	for _, e := range lay.g.Edges {
		mine, other := e.A, e.B
		if other.Box == b {
			mine, other = other, mine
		}
		if mine.Box != b || lay.layer[other.Box] != k {
			continue
		}
		y := lay.rowY(other) - 1 - lay.rowOffset(mine)
		if !found || y < best {
			best, found = y, true
		}
	}
	return best
}

// rowOffset is a row's line within its box, counting the separator
// before the routes.
func (lay *textLayout) rowOffset(e End) int {
	b := lay.g.Boxes[e.Box]
	if b.Rows[e.Row].Route || (firstRoute(b) >= 0 && e.Row > firstRoute(b)) {
		return e.Row + 1
	}
	return e.Row
}

// rowY is the canvas line of a row.
func (lay *textLayout) rowY(e End) int { return lay.top[e.Box] + 1 + lay.rowOffset(e) }

func firstRoute(b *Box) int {
	for i, r := range b.Rows {
		if r.Route {
			return i
		}
	}
	return -1
}

func boxWidth(b *Box) int {
	w := utf8.RuneCountInString(b.FullTitle()) + 6
	for _, r := range b.Rows {
		w = max(w, utf8.RuneCountInString(r.Text)+4)
	}
	return w
}

func boxHeight(b *Box) int {
	h := len(b.Rows) + 2
	if firstRoute(b) >= 0 {
		h++
	}
	return h
}

func (lay *textLayout) drawBox(c *canvas, i int, b *Box) {
	x, y, w := lay.colX[lay.layer[i]], lay.top[i], lay.colW[lay.layer[i]]
	title := "─ " + b.FullTitle() + " "
	c.text(x, y, "┌"+title+strings.Repeat("─", w-2-utf8.RuneCountInString(title))+"┐")
	line := y + 1
	for k, r := range b.Rows {
		if k == firstRoute(b) {
			c.text(x, line, "├"+strings.Repeat("┄", w-2)+"┤")
			line++
		}
		c.text(x, line, "│ "+r.Text+strings.Repeat(" ", w-3-utf8.RuneCountInString(r.Text))+"│")
		line++
	}
	c.text(x, line, "└"+strings.Repeat("─", w-2)+"┘")
}

// orderLanes orders the bent edges of a gap so that a segment ending at
// the right side never runs over one that starts at the left side on the
// same row: an edge that starts on row y gets a lane left of every edge
// that ends on row y. Otherwise by first row.
func orderLanes(es []*laidEdge) []*laidEdge {
	sort.SliceStable(es, func(i, j int) bool { return es[i].leftRows[0] < es[j].leftRows[0] })
	var out []*laidEdge
	done := make([]bool, len(es))
	for len(out) < len(es) {
		pick := -1
		for i, e := range es {
			if done[i] {
				continue
			}
			blocked := false
			for j, f := range es { // f must come first if it starts where e ends
				if j != i && !done[j] && shares(e.rightRows, f.leftRows) {
					blocked = true
					break
				}
			}
			if !blocked {
				pick = i
				break
			}
		}
		if pick < 0 { // a cycle: give up on it, keep row order
			for i := range es {
				if !done[i] {
					pick = i
					break
				}
			}
		}
		done[pick] = true
		out = append(out, es[pick])
	}
	return out
}

func shares(a, b []int) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func minMax(v []int) (int, int) {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// canvas is a grid of characters.
type canvas struct{ cells [][]rune }

func newCanvas(w, h int) *canvas {
	c := &canvas{cells: make([][]rune, h)}
	for i := range c.cells {
		c.cells[i] = []rune(strings.Repeat(" ", w))
	}
	return c
}

func (c *canvas) set(x, y int, r rune) {
	if y >= 0 && y < len(c.cells) && x >= 0 && x < len(c.cells[y]) {
		c.cells[y][x] = r
	}
}

func (c *canvas) get(x, y int) rune {
	if y >= 0 && y < len(c.cells) && x >= 0 && x < len(c.cells[y]) {
		return c.cells[y][x]
	}
	return ' '
}

func (c *canvas) text(x, y int, s string) {
	for _, r := range s {
		c.set(x, y, r)
		x++
	}
}

// hline and vline draw lines; where they cross an existing line they
// leave a crossing.
func (c *canvas) hline(x0, x1, y int) {
	for x := x0; x <= x1; x++ {
		if c.get(x, y) == '│' {
			c.set(x, y, '┼')
		} else {
			c.set(x, y, '─')
		}
	}
}

func (c *canvas) vline(x, y0, y1 int) {
	for y := y0; y <= y1; y++ {
		if c.get(x, y) == '─' {
			c.set(x, y, '┼')
		} else {
			c.set(x, y, '│')
		}
	}
}

// corner draws the turns of a bent edge at lane x between rows lo and hi.
func (c *canvas) corner(x, lo, hi int, e *laidEdge) {
	onLeft := func(y int) bool {
		for _, r := range e.leftRows {
			if r == y {
				return true
			}
		}
		return false
	}
	// The top turn comes from the left (┐) or goes to the right (┌); the
	// bottom turn likewise (┘, └).
	if onLeft(lo) {
		c.set(x, lo, '┐')
	} else {
		c.set(x, lo, '┌')
	}
	if onLeft(hi) {
		c.set(x, hi, '┘')
	} else {
		c.set(x, hi, '└')
	}
}

func (c *canvas) String() string {
	var b strings.Builder
	for _, row := range c.cells {
		b.WriteString(strings.TrimRight(string(row), " "))
		b.WriteByte('\n')
	}
	return b.String()
}
