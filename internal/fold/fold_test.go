package fold

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"short line", 20, []string{"short line"}},
		{"bottleneck: router r1 (92% softirq on cpu1)", 20, []string{"bottleneck: router", "  r1 (92% softirq on", "  cpu1)"}},
		{"  how: paired by block, signed rank", 16, []string{"  how: paired by", "    block,", "    signed rank"}},
		{"a averyveryverylongword b", 10, []string{"a averyveryverylongword", "  b"}}, // no break to an indent beyond the word before
		{"µµµµ ±±±± ····", 9, []string{"µµµµ ±±±±", "  ····"}},
		{"exactly ten", 11, []string{"exactly ten"}},
	} {
		got := Line(c.in, c.width)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Line(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

// TestLineKeepsEveryWord: folding loses no word and changes no order,
// and every line but one too long for any fits.
func TestLineKeepsEveryWord(t *testing.T) {
	s := "sent 1598464 = received 1046970 + named drops 551494 + unaccounted 0; the router r1 forwarded 1046970 of the 1289793 that entered it, and dropped 242823 at its egress queue"
	for width := 20; width < 200; width += 7 { // wider than any word and its indent
		got := Line(s, width)
		if a, b := strings.Fields(strings.Join(got, " ")), strings.Fields(s); strings.Join(a, " ") != strings.Join(b, " ") {
			t.Fatalf("width %d: words changed: %q", width, got)
		}
		for _, l := range got {
			if utf8.RuneCountInString(l) > width && strings.Contains(strings.TrimSpace(l), " ") {
				t.Errorf("width %d: a line of %d: %q", width, utf8.RuneCountInString(l), l)
			}
		}
	}
}

// TestWriter: words go out as they end (a line written in parts shows
// each part at once), split writes join, a row of columns that fits is
// kept, and Flush writes the last word.
func TestWriter(t *testing.T) {
	var b bytes.Buffer
	f := New(&b, 12)
	for _, p := range []string{"one two three ", "four\nfive", " six\n", "a    b   c\n", "seven eight nine"} {
		if _, err := f.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := b.String(), "one two\n  three four\nfive six\na    b   c\nseven eight"; got != want {
		t.Errorf("before Flush: %q, want %q", got, want)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "one two\n  three four\nfive six\na    b   c\nseven eight\n  nine"; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
	b.Reset()
	f = New(&b, 120)
	f.Write([]byte("round 1/5: "))
	if b.String() != "round 1/5:" {
		t.Errorf("a line's first part is not shown at once: %q", b.String())
	}
}
