package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// statusLine is one line at the bottom of a terminal that a long run
// rewrites in place every second: how long it has run and what it last
// finished. It is plain ANSI (a carriage return and "erase line"), which
// every terminal nslab runs in understands; a progress-bar library would
// bring bars and spinners for a line that has no known end. On a writer
// that is not a terminal, or when quiet, it writes nothing.
//
// Other output to the same writer goes through Write, which takes the line
// away first and draws it again after a whole line.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer // nil: off
	width int
	start time.Time
	what  string // the long run, e.g. "MLRsearch"
	last  string // what it last finished
	shown bool
	done  chan struct{}
}

// newStatusLine makes the line for w (a terminal, else off), for a long
// run named what, and starts redrawing it.
func newStatusLine(w io.Writer, quiet bool, what string) *statusLine {
	s := &statusLine{start: time.Now(), what: what, done: make(chan struct{})}
	if f, ok := w.(*os.File); ok && !quiet {
		if s.width = termWidth(f); s.width > 0 {
			s.w = w
			go s.tick()
		}
	}
	return s
}

// tick redraws the line every second until Stop.
func (s *statusLine) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.mu.Lock()
			s.draw()
			s.mu.Unlock()
		}
	}
}

// draw writes the line; the caller holds mu.
func (s *statusLine) draw() {
	line := fmt.Sprintf("%s: %s", s.what, time.Since(s.start).Round(time.Second))
	if s.last != "" {
		line += "; " + s.last
	}
	if r := []rune(line); len(r) >= s.width {
		line = string(r[:s.width-1])
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s", line)
	s.shown = true
}

// erase takes the line away; the caller holds mu.
func (s *statusLine) erase() {
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
}

// Set says what the run last finished, and draws the line; nothing when
// off. It is a no-op on a nil line.
func (s *statusLine) Set(msg string) {
	if s == nil || s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = msg
	s.draw()
}

// Func is Set, or nil when the line is off (so callers skip the work).
func (s *statusLine) Func() func(string) {
	if s.w == nil {
		return nil
	}
	return s.Set
}

// Write writes p to the terminal below the line's place: the line is
// erased, p written, and the line drawn again when p ends a line. Off, it
// passes p through.
func (s *statusLine) Write(p []byte) (int, error) {
	if s.w == nil {
		return 0, fmt.Errorf("status line: nowhere to write") // never: callers use Writer
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	n, err := s.w.Write(p)
	if err == nil && strings.HasSuffix(string(p), "\n") {
		s.draw()
	}
	return n, err
}

// Writer is where the command's other stderr output goes while the line
// is up: through the line when it is on, else w itself.
func (s *statusLine) Writer(w io.Writer) io.Writer {
	if s.w == nil {
		return w
	}
	return s
}

// Stop stops redrawing and takes the line away.
func (s *statusLine) Stop() {
	select {
	case <-s.done:
		return
	default:
		close(s.done)
	}
	if s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
}
