package spec

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Script is a shell script a node runs whole at deploy (startup:), as
// Kathara runs a machine's NAME.startup: with bash, in the node's
// namespaces and view, one line after another whatever each returns (no
// set -e), so that a line spread over several (if ... fi, a loop, a
// function), a variable set on one line and used on the next, and
// source FILE work. Its service lines (systemctl start X, service X
// start, /etc/init.d/X start) start the services nslab runs.
type Script struct {
	Text string
	// From is the file it was read from, relative to the lab file ("":
	// text in the lab file); Line is the lab file's line of its first
	// line when it is text there.
	From string
	Line int
}

// Name is how messages name the script: its file, or the lab file's line.
func (s *Script) Name() string {
	if s.From != "" {
		return s.From
	}
	return fmt.Sprintf("the startup script at line %d of the lab file", s.Line)
}

// scriptKeys are a {text|from} script's keys.
var scriptKeys = keysOf(scriptDef)

// scripts reads startup: a list of scripts, each text or {from: FILE}
// or {text: T}.
func (r *reporter) scripts(e kv) []*Script {
	items, _ := r.list(e.v, e.path, `[{from: r1.startup}]`)
	var out []*Script
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", e.path, i)
		var s *Script
		if item.Kind == yaml.ScalarNode {
			text, ok := r.str(item, p, "a script's text, or {from: FILE}")
			if !ok {
				continue
			}
			src := textSource(item, p)
			s = &Script{Text: text, Line: src.line}
		} else {
			f := r.fields(item, p, "a script", scriptKeys...)
			t, hasText := f["text"]
			fr, hasFrom := f["from"]
			switch {
			case hasText == hasFrom:
				r.errf(p, "a script is {text: T} or {from: FILE}: give one of them")
				continue
			case hasText:
				text, ok := r.str(t.v, t.path, "the script's text")
				if !ok {
					continue
				}
				s = &Script{Text: text, Line: textSource(t.v, t.path).line}
			default:
				var file File
				src := r.readFrom(fr, &file)
				if src == nil {
					continue
				}
				s = &Script{Text: src.text, From: file.From}
			}
		}
		if strings.ContainsRune(s.Text, 0) {
			r.errf(p, "a script cannot hold a NUL byte")
			continue
		}
		out = append(out, s)
	}
	return out
}
