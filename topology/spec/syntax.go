package spec

import (
	"fmt"
	"strings"
)

// yaml.v3 places a syntax error at the construct it was parsing (a
// mapping that began lines before, at its first column), not at the
// mistake. When it fails, syntaxSpot looks at the text itself for the
// mistakes people make in lab files, first in the file first: a tab in
// the indentation, a quote not closed, a bracket not closed or closed
// by the other kind, a key indented like none of the keys above it, and
// a line indented deeper than a key that has a value on its own line
// (which yaml.v3 reports a line late, at column 1, in its own words):
// there the key with the value is one space too few (its block's other
// keys are one step under their parent), the deeper line one space too
// many, or a key put under a scalar.

// spot is where a mistake is, 1-based, and what it is.
type spot struct {
	line, col int
	what      string
}

// syntaxSpot finds the first mistake it knows in data, or nil.
func syntaxSpot(data []byte) *spot {
	lines := strings.Split(string(data), "\n")
	step := indentStep(lines)
	var indents []level // of the block keys above, innermost last
	var prev *keyLine   // the line with text above, when it is a key with a value
	var above *keyLine  // the line with text above
	scalar := -1        // the indentation of a key whose block scalar (|, >) goes on
	for i, raw := range lines {
		line := strings.TrimRight(raw, "\r")
		body := strings.TrimLeft(line, " ")
		if body == "" || body[0] == '#' {
			continue
		}
		indent := len(line) - len(body)
		if scalar >= 0 && indent > scalar {
			continue // text of a block scalar: anything goes
		}
		scalar = -1
		if s := tabSpot(line); s != nil {
			return &spot{i + 1, s.col, s.what}
		}
		if s := bracketSpot(line, lines[i+1:]); s != nil {
			return &spot{i + 1, s.col, s.what}
		}
		if body == "---" || body == "..." {
			continue
		}
		cur := &keyLine{line: i + 1, indent: indent, body: body}
		if prev != nil && indent > prev.indent {
			return underValue(prev, cur, indents, step)
		}
		if item := listItem(above, cur); item != nil {
			return item
		}
		if s := indentSpot(indents, cur, step); s != nil {
			return s
		}
		indents = pushIndent(indents, cur)
		prev, above = withValue(i+1, indent, body), cur
		if blockScalar(body) {
			scalar = indent
		}
	}
	return nil
}

// blockScalar reports whether a line's value is a block scalar (key: |,
// key: >-, - |), whose text follows on deeper lines.
func blockScalar(body string) bool {
	if i := strings.Index(body, " #"); i >= 0 {
		body = body[:i]
	}
	body = strings.TrimRight(body, " ")
	for _, end := range []string{"|", ">", "|-", ">-", "|+", ">+"} {
		if strings.HasSuffix(body, ": "+end) || strings.HasSuffix(body, "- "+end) || body == end {
			return true
		}
	}
	return false
}

// tabSpot finds a tab in a line's indentation.
func tabSpot(line string) *spot {
	for j, c := range line {
		switch c {
		case ' ', '-':
		case '\t':
			return &spot{0, j + 1, "a tab in the indentation: YAML indents with spaces only"}
		default:
			return nil
		}
	}
	return nil
}

// bracketSpot checks one line's quotes and flow brackets, outside
// comments: a quote not closed, a bracket closed by the other kind or
// not at all (unless the next line goes on deeper, a flow collection
// written over several lines, which it leaves to the parser).
func bracketSpot(line string, next []string) *spot {
	var stack []int // columns of open brackets
	var quote rune
	quoteAt := 0
	for j, c := range line {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if j == 0 || strings.ContainsRune(" :[{,-", rune(line[j-1])) {
				quote, quoteAt = c, j
			}
		case c == '#' && (j == 0 || line[j-1] == ' '):
			return openAtEnd(line, stack, next)
		case c == '[' || c == '{':
			stack = append(stack, j)
		case c == ']' || c == '}':
			if len(stack) == 0 {
				return &spot{0, j + 1, fmt.Sprintf("%c closes nothing: remove it, or open it before", c)}
			}
			open := line[stack[len(stack)-1]]
			if want := closer(open); byte(c) != want {
				return &spot{0, j + 1, fmt.Sprintf("%c here closes the %c at column %d: write %c", c, open, stack[len(stack)-1]+1, want)}
			}
			stack = stack[:len(stack)-1]
		}
	}
	if quote != 0 {
		return &spot{0, quoteAt + 1, fmt.Sprintf("this %c is not closed on its line: add the closing %c", quote, quote)}
	}
	return openAtEnd(line, stack, next)
}

// openAtEnd reports the innermost bracket still open at the line's end,
// unless the next line with text is indented deeper (a continuation).
func openAtEnd(line string, stack []int, next []string) *spot {
	if len(stack) == 0 {
		return nil
	}
	indent := len(line) - len(strings.TrimLeft(line, " "))
	for _, n := range next {
		if body := strings.TrimLeft(n, " "); body != "" && body[0] != '#' {
			if len(n)-len(body) > indent {
				return nil
			}
			break
		}
	}
	open := stack[len(stack)-1]
	return &spot{0, open + 1, fmt.Sprintf("this %c is not closed: add %c at the end of line", line[open], closer(line[open]))}
}

func closer(open byte) byte {
	if open == '[' {
		return ']'
	}
	return '}'
}

// level is an indentation in use: its spaces, and the first line with
// text there (since the last shallower line).
type level struct {
	indent int
	first  *keyLine
}

// indentSpot says what is wrong with line cur, indented like none of the
// keys enclosing it (indents, outermost first) and not deeper than the
// last: when it is one step under an enclosing key whose block began
// at another indentation, that block's first line is the mistake (a
// space or more too many or too few, the rest of its block says which);
// else cur is, indented like no key above it.
func indentSpot(indents []level, cur *keyLine, step int) *spot {
	if len(indents) == 0 || cur.indent > indents[len(indents)-1].indent {
		return nil
	}
	for _, k := range indents {
		if k.indent == cur.indent {
			return nil
		}
	}
	for i, p := range indents[:len(indents)-1] {
		first := indents[i+1]
		if p.indent < cur.indent && cur.indent == p.indent+step && first.indent != cur.indent && first.indent > p.indent {
			than := "more"
			n := first.indent - cur.indent
			if n < 0 {
				than, n = "fewer", -n
			}
			return &spot{first.first.line, first.indent + 1, fmt.Sprintf("%s is indented %s, %s than the rest of its block (%d, as %s on line %d): indent it %s",
				firstWord(first.first.body), countSpaces(first.indent), spaces(n, than), cur.indent, firstWord(cur.body), cur.line, countSpaces(cur.indent))}
		}
	}
	var near []string
	for _, k := range indents {
		near = append(near, fmt.Sprint(k.indent))
	}
	return &spot{cur.line, cur.indent + 1, fmt.Sprintf("indented %s, like no key above it (%s): indent it as its siblings are", countSpaces(cur.indent), strings.Join(near, ", "))}
}

// listItem finds a list item indented deeper than the line above it, an
// item that holds a whole value ("- {to: a}", "- 10.0.0.1/24"): nothing
// can be under that one, so the deeper item is the mistake.
func listItem(above, cur *keyLine) *spot {
	if above == nil || !strings.HasPrefix(cur.body, "- ") || !strings.HasPrefix(above.body, "- ") || cur.indent <= above.indent {
		return nil
	}
	item := strings.TrimSpace(strings.TrimPrefix(above.body, "- "))
	if i := strings.Index(item, " #"); i >= 0 {
		item = strings.TrimSpace(item[:i])
	}
	if k, _, ok := strings.Cut(item, ": "); ok && !strings.ContainsAny(k, "{[") || strings.HasSuffix(item, ":") || item == "" {
		return nil // "- name: x": a mapping, whose keys go under it
	}
	return &spot{cur.line, cur.indent + 1, fmt.Sprintf("this list item is indented %s, %s than the item on line %d (%d), which holds a whole value: indent it %s, as its siblings are",
		countSpaces(cur.indent), spaces(cur.indent-above.indent, "more"), above.line, above.indent, countSpaces(above.indent))}
}

// firstWord is a line's key (without its colon) or list dash and first word.
func firstWord(body string) string {
	f := strings.Fields(body)
	if len(f) == 0 {
		return ""
	}
	if f[0] == "-" && len(f) > 1 {
		return "- " + strings.TrimSuffix(f[1], ":")
	}
	return strings.TrimSuffix(f[0], ":") + ":"
}

// pushIndent keeps the levels of the keys enclosing cur and adds cur's
// (its first line, when it is new).
func pushIndent(indents []level, cur *keyLine) []level {
	for len(indents) > 0 && indents[len(indents)-1].indent > cur.indent {
		indents = indents[:len(indents)-1]
	}
	if len(indents) > 0 && indents[len(indents)-1].indent == cur.indent {
		return indents
	}
	return append(indents, level{indent: cur.indent, first: cur})
}

// keyLine is a line of block YAML: where it is, its indentation, its
// text, and for a key with a value on its line, the key and the value.
type keyLine struct {
	line, indent int
	body         string
	key, value   string
}

// withValue is the line as a keyLine when it is a key with a scalar value
// on its own line ("forwarding: true", "- name: x"), nil otherwise (a key
// whose block follows, a block scalar, a flow collection, a list item).
func withValue(line, indent int, body string) *keyLine {
	text := body
	if i := strings.Index(text, " #"); i >= 0 {
		text = text[:i]
	}
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "- ") || strings.HasPrefix(text, "\"") || strings.HasPrefix(text, "'") {
		return nil
	}
	key, value, ok := strings.Cut(text, ": ")
	value = strings.TrimSpace(value)
	if !ok || key == "" || value == "" || blockScalar(text) || strings.ContainsAny(value[:1], "[{&*!|>") {
		return nil
	}
	return &keyLine{line: line, indent: indent, body: body, key: key, value: value}
}

// underValue says what is wrong when cur is indented deeper than key, a
// key whose value is on its line (so nothing can be under it): key is
// indented a step too few where cur is one step under key's parent (key
// is then the odd one out of its block), cur a step too many where it is
// neither a step under key's parent nor under key, or else cur is a key
// put under a scalar. indents are the keys enclosing key, key's last;
// step the file's indentation step.
func underValue(key, cur *keyLine, indents []level, step int) *spot {
	parent := key.indent - step // the file's own step above the top level
	if len(indents) > 1 {
		parent = indents[len(indents)-2].indent
	}
	curWord := strings.TrimSuffix(strings.Fields(cur.body)[0], ":")
	switch {
	case key.indent != parent+step && cur.indent == parent+step:
		return &spot{key.line, key.indent + 1, fmt.Sprintf("%s: is indented %s, %s than the keys of its block (%d, as %s: on the next line): indent it %s",
			key.key, countSpaces(key.indent), spaces(parent+step-key.indent, "fewer"), parent+step, curWord, countSpaces(parent+step))}
	case cur.indent == key.indent+step:
		return &spot{cur.line, cur.indent + 1, fmt.Sprintf("%s is indented under %s: (line %d), which has a value (%s), so nothing can be under it: indent it %s like %s:, or move the value of %s: under it",
			curWord, key.key, key.line, key.value, countSpaces(key.indent), key.key, key.key)}
	default:
		return &spot{cur.line, cur.indent + 1, fmt.Sprintf("%s is indented %s, %s than %s: on the line above (%d): indent it %s, as its siblings are",
			curWord, countSpaces(cur.indent), spaces(cur.indent-key.indent, "more"), key.key, key.indent, countSpaces(key.indent))}
	}
}

// countSpaces says n spaces in words: "1 space", "4 spaces".
func countSpaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}

// spaces says n spaces more or fewer in words.
func spaces(n int, than string) string {
	if n == 1 {
		return "one space " + than
	}
	return fmt.Sprintf("%d spaces %s", n, than)
}

// indentStep is the file's indentation step: the most common amount a
// line with text is indented deeper than the one above it (2 when none
// is).
func indentStep(lines []string) int {
	count := map[int]int{}
	last := -1
	for _, raw := range lines {
		body := strings.TrimLeft(raw, " ")
		if body == "" || body[0] == '#' {
			continue
		}
		indent := len(raw) - len(body)
		if last >= 0 && indent > last {
			count[indent-last]++
		}
		last = indent
	}
	step, most := 2, 0
	for d, n := range count {
		if n > most || n == most && d < step {
			step, most = d, n
		}
	}
	return step
}
