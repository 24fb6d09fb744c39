package graph

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

// svgElement is an element of the drawing, with the attributes the live
// view uses.
type svgElement struct {
	Name string
	ID   string
	A, B string
	Node string
}

// svgElements parses an SVG drawing into its elements.
func svgElements(t *testing.T, doc string) []svgElement {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var out []svgElement
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("not XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		e := svgElement{Name: se.Name.Local}
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "id":
				e.ID = a.Value
			case "data-a":
				e.A = a.Value
			case "data-b":
				e.B = a.Value
			case "data-node":
				e.Node = a.Value
			}
		}
		out = append(out, e)
	}
}

// TestSVGNamesEveryLink: every example's drawing is XML with a group per
// node and, per edge, a line, label and sparkline naming the edge's two
// interfaces, which are interfaces of the lab; and links between boxes
// in adjacent columns are level where nothing stands in the way (a
// chain's links are all straight).
func TestSVGNamesEveryLink(t *testing.T) {
	for name, l := range labs(t) {
		g := Build(l)
		els := svgElements(t, SVG(g))
		ids := map[string]svgElement{}
		for _, e := range els {
			if e.ID != "" {
				ids[e.ID] = e
			}
		}
		for _, b := range g.Boxes {
			if e, ok := ids["node-"+b.ID]; !ok || e.Node != b.ID {
				t.Errorf("%s: no group for %s", name, b.ID)
			}
		}
		for i, e := range g.Edges {
			a := g.Boxes[e.A.Box].ID + ":" + g.Boxes[e.A.Box].Rows[e.A.Row].Port
			b := g.Boxes[e.B.Box].ID + ":" + g.Boxes[e.B.Box].Rows[e.B.Row].Port
			for _, id := range []string{"link-%d", "label-%d", "label-%d-ba", "drop-%d-a", "drop-%d-b"} {
				el, ok := ids[fmt.Sprintf(id, i)]
				if !ok || el.A != a || el.B != b {
					t.Errorf("%s: %s is %+v, want ends %s and %s", name, fmt.Sprintf(id, i), el, a, b)
				}
			}
		}
	}
}

// TestSVGEscapes: names and notes are text, not markup.
func TestSVGEscapes(t *testing.T) {
	g := &Graph{Lab: "a<b", Boxes: []*Box{{ID: "n&1", Title: "n&1", Note: "<script>", Rows: []Row{{Text: "e0 <x>", Port: "e0"}}}}}
	doc := SVG(g)
	if strings.Contains(doc, "<script>") || strings.Contains(doc, "<x>") {
		t.Fatalf("unescaped: %s", doc)
	}
	svgElements(t, doc)
}

// TestSVGChainIsStraight: in a chain (client, router, server, whose
// boxes have one, two and one interfaces), every link is level.
func TestSVGChainIsStraight(t *testing.T) {
	for _, name := range []string{"client-router-server", "forwarding-benchmark"} {
		l, ok := labs(t)[name]
		if !ok {
			t.Fatalf("no example %s", name)
		}
		g := Build(l)
		pos, _, _ := svgLayout(g)
		for i, e := range g.Edges {
			if _, ay, _, zy, _ := edgeEnds(g, pos, e); ay != zy {
				t.Errorf("%s: link %d is slanted: y %d to %d", name, i, ay, zy)
			}
		}
	}
}
