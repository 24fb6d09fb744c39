package graph

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"sync"
)

// Dot renders the graph as Graphviz source (render with dot -Tsvg): each
// box an HTML-like table whose interface rows are ports, links drawn
// between those ports, left to right. Routers are shaded, PFs dashed.
func Dot(g *Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// lab %s, drawn by nslab graph; render with: dot -Tsvg -o %s.svg\n", g.Lab, g.Lab)
	fmt.Fprintf(&b, "graph %q {\n", "lab "+g.Lab)
	b.WriteString("  rankdir=LR;\n  node [shape=plaintext, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=9];\n")
	for _, box := range g.Boxes {
		head, style := "#dddddd", ""
		switch {
		case box.Router:
			head = "#b3d4f5"
		case box.PF:
			head, style = "#f5deb3", ` style="dashed"`
		}
		fmt.Fprintf(&b, "  %q [label=<<table border=\"1\" cellborder=\"0\" cellspacing=\"0\" cellpadding=\"3\"%s>\n", box.ID, style)
		fmt.Fprintf(&b, "    <tr><td bgcolor=%q><b>%s</b>%s</td></tr>\n", head, esc(box.Title), noteHTML(box.Note))
		for i, r := range box.Rows {
			attrs := ` align="left"`
			if r.Port != "" {
				attrs = fmt.Sprintf(` port="p%d" align="left"`, i)
			}
			text := esc(r.Text)
			if r.Route {
				text = "<i>" + text + "</i>"
			}
			fmt.Fprintf(&b, "    <tr><td%s>%s</td></tr>\n", attrs, text)
		}
		b.WriteString("  </table>>];\n")
	}
	// Edges run from the box nearer the start of the lab to the farther
	// one, as in the text drawing, so a chain reads left to right.
	layer := g.layers()
	for _, e := range g.Edges {
		from, to := e.A, e.B
		if layer[from.Box] > layer[to.Box] {
			from, to = to, from
		}
		tail, head := ":e", ":w"
		if layer[from.Box] == layer[to.Box] {
			tail, head = "", ""
		}
		attrs := ""
		switch {
		case e.VF:
			attrs = ` [style="dashed"]`
		case e.Label != "":
			attrs = fmt.Sprintf(" [label=%q, fontsize=10]", e.Label)
		}
		fmt.Fprintf(&b, "  %q:\"p%d\"%s -- %q:\"p%d\"%s%s;\n", g.Boxes[from.Box].ID, from.Row, tail, g.Boxes[to.Box].ID, to.Row, head, attrs)
	}
	b.WriteString("}\n")
	return b.String()
}

func noteHTML(note string) string {
	if note == "" {
		return ""
	}
	return " (" + esc(note) + ")"
}

func esc(s string) string { return html.EscapeString(s) }

// Mermaid renders the graph as a Mermaid flowchart (it renders in Markdown
// on GitHub and GitLab). Mermaid has no ports, so a link's label names its
// two interfaces; routers are drawn as hexagons, PFs as stadiums.
func Mermaid(g *Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%%%% lab %s, drawn by nslab graph\nflowchart LR\n", g.Lab)
	ids := mermaidIDs(g)
	for i, box := range g.Boxes {
		lines := []string{"<b>" + mmEsc(box.Title) + "</b>" + mmNote(box.Note)}
		for _, r := range box.Rows {
			t := mmEsc(strings.TrimSpace(r.Text))
			if r.Route {
				t = "<i>" + t + "</i>"
			}
			lines = append(lines, t)
		}
		label := strings.Join(lines, "<br/>")
		switch {
		case box.Router:
			fmt.Fprintf(&b, "  %s{{\"%s\"}}\n", ids[i], label)
		case box.PF:
			fmt.Fprintf(&b, "  %s([\"%s\"])\n", ids[i], label)
		default:
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", ids[i], label)
		}
	}
	for _, e := range g.Edges {
		a, z := g.Boxes[e.A.Box], g.Boxes[e.B.Box]
		label := mmEsc(a.Rows[e.A.Row].Port + " — " + z.Rows[e.B.Row].Port)
		if e.Label != "" {
			label += "<br/>" + mmEsc(e.Label)
		}
		arrow := "---"
		if e.VF {
			arrow = "-.-"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.A.Box], arrow, label, ids[e.B.Box])
	}
	return b.String()
}

var nonWord = lazyRE(`[^A-Za-z0-9_]`)

// mermaidIDs gives each box an identifier Mermaid accepts: its name with
// other characters as _, never a keyword, never twice.
func mermaidIDs(g *Graph) []string {
	reserved := map[string]bool{"end": true, "graph": true, "subgraph": true, "flowchart": true, "style": true,
		"class": true, "classDef": true, "click": true, "linkStyle": true, "direction": true, "default": true}
	seen := map[string]bool{}
	ids := make([]string, len(g.Boxes))
	for i, box := range g.Boxes {
		id := nonWord().ReplaceAllString(box.ID, "_")
		if reserved[id] || reserved[strings.ToLower(id)] || (id != "" && id[0] >= '0' && id[0] <= '9') {
			id = "n_" + id
		}
		for base, k := id, 2; seen[id]; k++ {
			id = fmt.Sprintf("%s_%d", base, k)
		}
		seen[id] = true
		ids[i] = id
	}
	return ids
}

func mmNote(note string) string {
	if note == "" {
		return ""
	}
	return " (" + mmEsc(note) + ")"
}

// mmEsc escapes text inside a quoted Mermaid label.
func mmEsc(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "|", "#124;")
	return r.Replace(s)
}

// lazyRE compiles a regular expression the first time it is used, not at
// program start: every nslab command pays for package initialisation.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
