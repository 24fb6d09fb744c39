package spec

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxFileSize is the largest topology file nslab reads: a guard for
// memory, far above realistic labs (a generated 10,000-node chain with
// routes is about 5 MiB). Parsing takes about 30 bytes of memory per byte
// of file at its peak (make bench-topology measures it).
const MaxFileSize = 64 << 20

// maxNodes bounds the number of YAML nodes walked, a second guard (after the
// size limit and the refusal of aliases) against files built to exhaust memory.
const maxNodes = 2_000_000

// decodeDocument parses data into one YAML document tree without expanding
// anything. It reports oversize input, syntax errors, several documents and
// any alias (aliases are refused, never expanded: a "billion laughs" file
// costs nothing).
func (r *reporter) decodeDocument(data []byte) *yaml.Node {
	if len(data) > MaxFileSize {
		r.errAt(0, 0, "", "file is %d bytes; nslab reads topology files of at most %d bytes (64 MiB): split the lab", len(data), MaxFileSize)
		return nil
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			r.errAt(0, 0, "", "file is empty: a lab needs at least name: and nodes:")
			return nil
		}
		r.yamlError(err, data)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		r.errAt(extra.Line, extra.Column, "", "a second YAML document starts here: a topology file holds one document; remove the extra ---")
	} else if !errors.Is(err, io.EOF) {
		r.yamlError(err, data)
	}
	if len(doc.Content) == 0 {
		r.errAt(0, 0, "", "file is empty: a lab needs at least name: and nodes:")
		return nil
	}
	count := 0
	if !r.refuseAliases(doc.Content[0], &count) {
		return nil
	}
	// Aliases were reported; the walk below skips them, so the rest of the
	// file is still checked in the same round.
	return doc.Content[0]
}

var yamlLine = lazyRE(`line (\d+)`)

// yamlError turns a yaml.v3 syntax error into a positioned problem: at
// the mistake when a look at the text finds it (syntaxSpot), with the
// line's text, else where yaml.v3 says.
func (r *reporter) yamlError(err error, data []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimSpace(strings.Replace(msg, m[0]+":", "", 1))
	}
	if s := syntaxSpot(data); s != nil {
		text := strings.TrimSpace(strings.Split(string(data), "\n")[s.line-1])
		r.errAt(s.line, s.col, "", "YAML syntax: %s (the line: %q; the parser: %s)", s.what, text, msg)
		return
	}
	r.errAt(line, 1, "", "YAML syntax: %s", msg)
}

// refuseAliases walks the tree and reports every alias; it returns false when
// the tree must not be used.
func (r *reporter) refuseAliases(n *yaml.Node, count *int) bool {
	*count++
	if *count > maxNodes {
		r.errAt(n.Line, n.Column, "", "file has more than %d YAML nodes: refused", maxNodes)
		return false
	}
	if n.Kind == yaml.AliasNode {
		r.errAt(n.Line, n.Column, "", "YAML alias *%s: aliases are refused (never expanded); write the value out", n.Value)
		return true
	}
	for _, c := range n.Content {
		if !r.refuseAliases(c, count) {
			return false
		}
	}
	return true
}

// kv is one entry of a mapping.
type kv struct {
	key  string
	k, v *yaml.Node
	path string
}

// entries returns the entries of a mapping at path, reporting a non-mapping
// and duplicate keys (the later one is reported and dropped). A null value
// is an empty mapping.
func (r *reporter) entries(n *yaml.Node, path, what string) []kv {
	if n == nil || isNull(n) || n.Kind == yaml.AliasNode {
		return nil
	}
	r.at(path, n.Line, n.Column)
	if n.Kind != yaml.MappingNode {
		r.errf(path, "must be a mapping (%s), not %s", what, describe(n))
		return nil
	}
	seen := map[string]int{}
	var out []kv
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			r.errAt(k.Line, k.Column, path, "keys must be plain names, not %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			r.errAt(k.Line, k.Column, path, "duplicate key %q (first at line %d): remove one", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, kv{key: k.Value, k: k, v: v})
	}
	return out
}

// fields is entries for a mapping with a fixed set of keys: unknown keys are
// reported with the nearest known one as a hint. Child paths are path.key.
func (r *reporter) fields(n *yaml.Node, path, what string, allowed ...string) map[string]kv {
	out := map[string]kv{}
	for _, e := range r.entries(n, path, what) {
		e.path = joinPath(path, e.key)
		if !contains(allowed, e.key) {
			hint := ""
			if s := nearest(e.key, allowed); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			r.errAt(e.k.Line, e.k.Column, e.path, "unknown key%s; %s takes: %s", hint, what, strings.Join(allowed, ", "))
			continue
		}
		r.at(e.path, e.v.Line, e.v.Column)
		out[e.key] = e
	}
	return out
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// str reads a scalar as text. Numbers are taken as written (a node named 1 is
// "1"); booleans, nulls and collections are type errors.
func (r *reporter) str(n *yaml.Node, path, what string) (string, bool) {
	if n.Kind == yaml.AliasNode {
		return "", false // reported once, by refuseAliases
	}
	r.at(path, n.Line, n.Column)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float") {
		r.errf(path, "must be %s, not %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// integer reads an integer scalar within [lo, hi].
func (r *reporter) integer(n *yaml.Node, path, what string, lo, hi int) (int, bool) {
	if n.Kind == yaml.AliasNode {
		return 0, false // reported once, by refuseAliases
	}
	r.at(path, n.Line, n.Column)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		r.errf(path, "must be an integer (%s), not %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v < int64(lo) || v > int64(hi) {
		r.errf(path, "%s must be between %d and %d, not %s", what, lo, hi, n.Value)
		return 0, false
	}
	return int(v), true
}

// boolean reads true or false.
func (r *reporter) boolean(n *yaml.Node, path, what string) (bool, bool) {
	if n.Kind == yaml.AliasNode {
		return false, false // reported once, by refuseAliases
	}
	r.at(path, n.Line, n.Column)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		r.errf(path, "must be true or false (%s), not %s", what, describe(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		r.errf(path, "must be true or false: %v", err)
		return false, false
	}
	return b, true
}

// list reads a sequence; its items' paths are path[i].
func (r *reporter) list(n *yaml.Node, path, example string) ([]*yaml.Node, bool) {
	if n.Kind == yaml.AliasNode {
		return nil, false // reported once, by refuseAliases
	}
	r.at(path, n.Line, n.Column)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		r.errf(path, "must be a list, e.g. %s, not %s", example, describe(n))
		return nil, false
	}
	for i, c := range n.Content {
		r.at(fmt.Sprintf("%s[%d]", path, i), c.Line, c.Column)
	}
	return n.Content, true
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names the kind of a YAML value for type errors.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!str":
		return fmt.Sprintf("the text %q", n.Value)
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	case "!!null":
		return "an empty value"
	}
	return fmt.Sprintf("%q (%s)", n.Value, n.Tag)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// nearest returns the candidate closest to s by edit distance, if close.
func nearest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
