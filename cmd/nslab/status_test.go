package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal 80 columns wide: the terminal side for
// the status line, and the other side's descriptor to read what a user
// would see.
func openPTY(t *testing.T) (term *os.File, screen int) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { unix.Close(m) })
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// readScreen reads what the terminal got until nothing came for 200 ms.
func readScreen(t *testing.T, m int) string {
	t.Helper()
	var out bytes.Buffer
	buf := make([]byte, 4096)
	for {
		fds := []unix.PollFd{{Fd: int32(m), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 200)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out.String()
		}
		r, err := unix.Read(m, buf)
		if err != nil || r == 0 {
			return out.String()
		}
		out.Write(buf[:r])
	}
}

// TestStatusLineOnATerminal: on a terminal the line is drawn in place,
// cut to the width, taken away for a line of other output and drawn again
// after it, and erased at the end.
func TestStatusLineOnATerminal(t *testing.T) {
	term, screen := openPTY(t)
	s := newStatusLine(term, false, "MLRsearch")
	s.Set("last run: ab, 64-byte frames: 250000 pps received")
	fmt.Fprint(s.Writer(term), "deployed lab x\n")
	s.Set(strings.Repeat("x", 200))
	s.Stop()
	got := readScreen(t, screen)
	t.Logf("%q", got)
	first := "\r\x1b[KMLRsearch: 0s; last run: ab, 64-byte frames: 250000 pps received"
	if !strings.HasPrefix(got, first) {
		t.Errorf("the first drawing is not %q", first)
	}
	if !strings.Contains(got, first+"\r\x1b[Kdeployed lab x\r\n\r\x1b[KMLRsearch") {
		t.Error("a line of other output is not written on an erased line and followed by the status line")
	}
	if !strings.Contains(got, "; "+strings.Repeat("x", 79-len("MLRsearch: 0s; "))+"\r\x1b[K") {
		t.Error("a long line is not cut to 79 columns, or not erased at the end")
	}
	if !strings.HasSuffix(got, "\r\x1b[K") {
		t.Error("the line is not erased at the end")
	}
}

// TestStatusLineOff: not a terminal, or -q: nothing is written, and other
// output goes straight to its writer.
func TestStatusLineOff(t *testing.T) {
	term, screen := openPTY(t)
	var buf bytes.Buffer
	for name, s := range map[string]*statusLine{"buffer": newStatusLine(&buf, false, "search"), "quiet": newStatusLine(term, true, "search")} {
		if s.Func() != nil {
			t.Errorf("%s: the line is on", name)
		}
		s.Set("run 1")
		fmt.Fprint(s.Writer(&buf), "a line\n")
		s.Stop()
	}
	if buf.String() != "a line\na line\n" {
		t.Errorf("the other output is %q, want the two lines alone", buf.String())
	}
	if got := readScreen(t, screen); got != "" {
		t.Errorf("quiet, the terminal got %q", got)
	}
}
