// Package fold keeps a text report within a screen's width: a line
// longer than the width is broken at its last space that fits, and the
// rest goes on the next lines, indented two spaces more than the line it
// came from, so a reader sees where a folded line continues.
//
// It is a few lines of our own rather than a word-wrap library: the
// libraries (mitchellh/go-wordwrap, muesli/reflow) wrap paragraphs to a
// width but keep no hanging indent, and a report's lines are not
// paragraphs: each is a claim that must read as one.
//
// A table's rows are lines too: a table that may be wider than the width
// is laid out by its writer (columns in blocks, a long cell on a line of
// its own) so that fold never breaks a row.
package fold

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// Width is the widest line of nslab's default reports: a terminal of
// 120 columns shows each line whole.
const Width = 120

// Line breaks one line (without its newline) into lines of at most
// width characters, at spaces; a word longer than a line stays whole on a
// line of its own. Every line after the first is indented two spaces more
// than s.
func Line(s string, width int) []string {
	var b strings.Builder
	f := New(&b, width)
	_, _ = f.Write([]byte(s))
	_ = f.Flush()
	return strings.Split(b.String(), "\n")
}

// Writer folds the lines written through it to a width as they come: a
// word goes out as soon as the space or newline after it does, so a
// line written in parts (a progress line: "round 1/5: ", then its
// figure) shows each part at once. Spaces are held until the next word:
// a line is never broken after a run of spaces, and a table's columns
// (runs of spaces) stay as they are on a row that fits.
type Writer struct {
	w      io.Writer
	width  int
	out    []byte // what this write sends
	word   []byte // the word being read
	spaces int    // spaces read after the last word placed
	col    int    // characters on the line so far
	indent int    // the line's leading spaces (-1: none read yet)
}

// New is a Writer to w that folds lines to width.
func New(w io.Writer, width int) *Writer { return &Writer{w: w, width: width, indent: -1} }

// Write folds p into the lines written so far; it returns len(p) when
// what could be placed was written.
func (f *Writer) Write(p []byte) (int, error) {
	for _, c := range p {
		switch {
		case c == '\n':
			f.place()
			f.out = append(f.out, '\n')
			f.col, f.spaces, f.indent = 0, 0, -1
		case c == ' ' && f.indent < 0:
			f.out = append(f.out, ' ') // leading: the line's own indent
			f.col++
		case c == ' ':
			f.place()
			f.spaces++
		default:
			if f.indent < 0 {
				f.indent = f.col
			}
			f.word = append(f.word, c)
		}
	}
	return len(p), f.send()
}

// place puts the word read on the line, or on a new one indented two
// more than the line's own when it would not fit.
func (f *Writer) place() {
	if len(f.word) == 0 {
		return
	}
	n := utf8.RuneCount(f.word)
	hang := f.indent + 2
	if f.col > hang && f.col+f.spaces+n > f.width { // past the hang: breaking there gains room
		f.out = append(f.out, '\n')
		f.out = append(f.out, bytes.Repeat([]byte{' '}, hang)...)
		f.col, f.spaces = hang, 0
	}
	f.out = append(f.out, bytes.Repeat([]byte{' '}, f.spaces)...)
	f.out = append(f.out, f.word...)
	f.col += f.spaces + n
	f.spaces, f.word = 0, f.word[:0]
}

// send writes what was placed.
func (f *Writer) send() error {
	if len(f.out) == 0 {
		return nil
	}
	_, err := f.w.Write(f.out)
	f.out = f.out[:0]
	return err
}

// Flush writes the word still being read, with no newline after it.
func (f *Writer) Flush() error {
	f.place()
	return f.send()
}
