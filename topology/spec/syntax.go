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
// by the other kind, a key indented like none of the keys above it.

// spot is where a mistake is, 1-based, and what it is.
type spot struct {
	line, col int
	what      string
}

// syntaxSpot finds the first mistake it knows in data, or nil.
func syntaxSpot(data []byte) *spot {
	lines := strings.Split(string(data), "\n")
	var indents []int // of the block keys above, innermost last
	scalar := -1      // the indentation of a key whose block scalar (|, >) goes on
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
		if s := indentSpot(indents, indent); s != "" {
			return &spot{i + 1, indent + 1, s}
		}
		indents = pushIndent(indents, indent)
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

// indentSpot says what is wrong with a key indented indent spaces, below
// keys indented as indents (outermost first): it must be one of them, or
// deeper than the last.
func indentSpot(indents []int, indent int) string {
	if len(indents) == 0 || indent > indents[len(indents)-1] {
		return ""
	}
	for _, k := range indents {
		if k == indent {
			return ""
		}
	}
	var near []string
	for _, k := range indents {
		near = append(near, fmt.Sprint(k))
	}
	return fmt.Sprintf("indented %d spaces, like no key above it (%s): indent it as its siblings are", indent, strings.Join(near, ", "))
}

// pushIndent keeps the indents of the keys enclosing one at indent.
func pushIndent(indents []int, indent int) []int {
	for len(indents) > 0 && indents[len(indents)-1] >= indent {
		indents = indents[:len(indents)-1]
	}
	return append(indents, indent)
}
