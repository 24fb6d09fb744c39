package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a topology file, with its place.
type Problem struct {
	File string
	Line int
	Col  int
	Path string // field path, e.g. links[1].endpoints[0]
	Msg  string // what is wrong and how to fix it
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every problem found in a file, in file order. It is the error
// Parse returns for an invalid file.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

func (ps Problems) sorted() Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Col < ps[j].Col
	})
	return ps
}

// pos is a place in the file.
type pos struct{ line, col int }

// reporter collects problems and knows where each field path is in the file.
type reporter struct {
	file  string
	where map[string]pos
	probs Problems
}

// at records where path is.
func (r *reporter) at(path string, line, col int) {
	if _, ok := r.where[path]; !ok {
		r.where[path] = pos{line, col}
	}
}

// errf reports a problem at path; the place is that of path, or of its
// nearest parent that has one.
func (r *reporter) errf(path, format string, args ...any) {
	p := r.lookup(path)
	r.probs = append(r.probs, Problem{File: r.file, Line: p.line, Col: p.col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// errAt reports a problem at an explicit place.
func (r *reporter) errAt(line, col int, path, format string, args ...any) {
	r.probs = append(r.probs, Problem{File: r.file, Line: line, Col: col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (r *reporter) lookup(path string) pos {
	for p := path; p != ""; p = parent(p) {
		if w, ok := r.where[p]; ok {
			return w
		}
	}
	return pos{}
}

// parent strips the last element of a field path: a.b[2] -> a.b -> a.
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndex(p, "["); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndex(p, "."); i >= 0 {
		return p[:i]
	}
	return ""
}
