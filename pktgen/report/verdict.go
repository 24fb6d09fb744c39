package report

import "strings"

// Line is the verdict as the report's bottleneck line: the limit, the
// node or nodes (several, comma-separated, make the limit plural), and
// the evidence in brackets.
func (v Verdict) Line() string {
	who := v.Limit
	if strings.Contains(v.Node, ", ") {
		who += "s"
	}
	if v.Node != "" {
		who += " " + v.Node
	}
	if v.Host != "" {
		who += " on host " + v.Host
	}
	var ev []string
	for _, e := range v.Evidence {
		if e != "" {
			ev = append(ev, e)
		}
	}
	if len(ev) == 0 {
		return who
	}
	return who + " (" + strings.Join(ev, ", ") + ")"
}
