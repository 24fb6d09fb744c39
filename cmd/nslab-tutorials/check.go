package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nslab/nslab/internal/fold"
)

// Drift: a doc's transcript no longer what today's code prints. compare
// sets each command's output in the doc against what it prints now,
// figures masked (they vary from run to run; the shape must not), and
// proseFigures finds measured figures the prose quotes that its blocks
// do not show.

// figure is a token holding a digit: a number, a duration (13.4s), a
// hash or hex figure (bc33720, 0a:1b:..) or a date. mask replaces each
// with "#" and runs of blanks with one (a wider number moves columns).
// A duration is masked whole, unit and all: the same figure prints as
// 523.31ms in one run and 1.07574s in the next (Go's durations, and the
// report's latency columns that go from µs to ms).
// A path to the repository's files is masked to the part inside it: a
// doc made in one clone shows /work/main/examples/x.yaml, a check in a
// scratch copy prints /tmp/nslab-docs-check-1/examples/x.yaml.
// The report's machine line ("kernel 6.18.44 ...; AMD EPYC") is masked
// after the kernel: machines of one kind differ in their CPU model (a
// README made on an AMD EPYC failed the check on an Intel Xeon).
var (
	cpuModel = regexp.MustCompile(`^(kernel \S.*; ).+$`)
	inRepo   = regexp.MustCompile(`(?:/[^\s/]+)+/((?:examples|docs)/)`)
	duration = regexp.MustCompile(`(?:\d+(?:\.\d+)?\s?(?:h|m|s|ms|µs|us|ns)\b)+`)
	figure   = regexp.MustCompile(`[0-9A-Fa-f]*[0-9][0-9A-Fa-f]*(?:[.,][0-9]+)*`)
	blanks   = regexp.MustCompile(`[ \t]+`)
)

// mask is one output line as compare sees it.
func mask(line string) string {
	line = inRepo.ReplaceAllString(line, "$1")
	line = cpuModel.ReplaceAllString(line, "${1}CPU")
	line = strings.ReplaceAll(line, "-dirty", "") // a version built from a changed tree
	line = duration.ReplaceAllString(line, "#t")
	return strings.TrimSpace(blanks.ReplaceAllString(figure.ReplaceAllString(line, "#"), " "))
}

// drift is one command whose output in the doc shows a line that today's
// code does not print.
type drift struct {
	Line      int    // the command's line in the doc, from 1
	Command   string // as the doc shows it
	DocLine   string // the first doc line today's output lacks
	TodayLine string // today's line where it was looked for ("": none left)
}

func (d drift) String() string {
	next := "nothing"
	if d.TodayLine != "" {
		next = fmt.Sprintf("%q", d.TodayLine)
	}
	return fmt.Sprintf("line %d, %s: the doc shows %q, which today's code does not print (its next line there: %s)", d.Line, d.Command, d.DocLine, next)
}

// nonBlank are the lines of an output that are not blank, trimmed.
func nonBlank(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// variesMark, on a line of its own right above a block's fence, names
// the starts of lines that come and go or change from run to run in more
// than figures, with the machine's noise: a stall line, the places that
// lost packets in an outage, a verdict, a decision. compare leaves such
// lines out on both sides. Several starts are separated by " | ".
const variesMark = "<!-- nslab-tutorials: varies: "

// varying are the line starts the marks above the block holding line c
// name.
func varying(lines []string, c int) []string {
	fence := c
	for fence > 0 && !strings.HasPrefix(lines[fence], "```") {
		fence--
	}
	var starts []string
	for i := fence - 1; i >= 0 && strings.HasPrefix(lines[i], "<!-- nslab-tutorials: "); i-- {
		if rest, ok := strings.CutPrefix(lines[i], variesMark); ok {
			starts = append(starts, strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), "-->"), " | ")...)
		}
	}
	for i := range starts {
		starts[i] = strings.TrimSpace(starts[i])
	}
	return starts
}

// without leaves out the lines that start with one of starts.
func without(lines, starts []string) []string {
	var out []string
	for _, l := range lines {
		if !slices.ContainsFunc(starts, func(p string) bool { return strings.HasPrefix(l, p) }) {
			out = append(out, l)
		}
	}
	return out
}

// unfold joins the lines fold made of one: a line indented two more
// than the line before it, where that line was too long to take the
// line's first word within the width (fold breaks a line before the word
// that does not fit, and indents the rest two more). Where a report's
// line breaks depends on its figures and paths (a wider number, the
// scratch copy's path), so compare sets the lines against each other
// whole.
func unfold(lines []string, width int) []string {
	var out []string
	base, last := -1, 0 // the logical line's indent, and its last physical line's length
	for _, l := range lines {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		word, _, _ := strings.Cut(strings.TrimLeft(l, " "), " ")
		if len(out) > 0 && base >= 0 && indent == base+2 && word != "" && last+1+utf8.RuneCountInString(word) > width {
			out[len(out)-1] += " " + strings.TrimLeft(l, " ")
			last = utf8.RuneCountInString(l)
			continue
		}
		out = append(out, l)
		base, last = indent, utf8.RuneCountInString(l)
	}
	return out
}

// compare finds the commands whose output in the doc (lines) shows a
// line that outs, today's output of each of cmds, does not print in the
// same order, figures masked. Lines today prints and the doc does not are
// no drift: on this kind of machine a run that happens to lose packets
// prints a table of where they went, and the doc's run may not have. A
// table the code no longer prints, a changed header or word is.
func compare(lines []string, cmds []int, outs map[int]string) []drift {
	var ds []drift
	for k, c := range cmds {
		starts := varying(lines, c)
		doc := without(nonBlank(unfold(lines[c+1:end(lines, cmds, k)], fold.Width)), starts)
		today := without(nonBlank(unfold(strings.Split(outs[k], "\n"), fold.Width)), starts)
		masked := make([]string, len(today))
		for i, t := range today {
			masked[i] = mask(t)
		}
		j := 0
		for _, d := range doc {
			from, md := j, mask(d)
			for j < len(today) && masked[j] != md {
				j++
			}
			if j == len(today) {
				next := ""
				if from < len(today) {
					next = today[from]
				}
				ds = append(ds, drift{Line: c + 1, Command: lines[c], DocLine: d, TodayLine: next})
				break
			}
			j++
		}
	}
	return ds
}

// quoted is a figure as prose quotes it: a number, or a range of two,
// with a unit after it.
var quoted = regexp.MustCompile(`(\d[\d,]*(?:\.\d+)?)(?:\s?[–-]\s?(\d[\d,]*(?:\.\d+)?))?\s?(?:k|M)?(?:pps|ms|µs|us|ns|s|Mb/s|Mbit/s|Gb/s|%|x|frames|packets|segments)\b`)

// measured says whether a figure looks measured rather than set: it has
// a fraction (0.72, 1.02) or is a number of three digits or more that is
// not round (256873, not 1000 or 250, which are a file's or the kernel's
// settings or figures worked from them).
func measured(fig string) bool {
	fig = strings.ReplaceAll(fig, ",", "")
	return strings.Contains(fig, ".") || (len(fig) >= 3 && !strings.HasSuffix(fig, "0"))
}

// block is a fenced code block: its fences' lines and its text.
type block struct {
	from, to int
	text     string
}

// blocks are a doc's fenced code blocks.
func blocks(lines []string) []block {
	var bs []block
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		bs = append(bs, block{i, j, strings.Join(lines[i+1:min(j, len(lines))], "\n")})
		i = j
	}
	return bs
}

// proseFigures finds measured figures that the prose after a transcript
// block quotes and neither that block nor the next one shows (prose
// after a heading goes with neither): make tutorials changes the
// blocks' figures and not the prose, so a figure copied into prose
// drifts. Figures of other runs are said in round numbers.
func proseFigures(lines []string) []string {
	bs := blocks(lines)
	var bad []string
	for n, b := range bs {
		if !strings.Contains("\n"+b.text, "\n$ ") {
			continue // not a transcript
		}
		stop, next := len(lines), ""
		if n+1 < len(bs) {
			stop, next = bs[n+1].from, bs[n+1].text
		}
		for k := b.to + 1; k < stop && !strings.HasPrefix(lines[k], "#"); k++ {
			for _, m := range quoted.FindAllStringSubmatch(lines[k], -1) {
				for _, fig := range m[1:3] {
					if fig != "" && measured(fig) && !strings.Contains(b.text, fig) && !strings.Contains(next, fig) {
						bad = append(bad, fmt.Sprintf("line %d quotes %q, which the block above it (lines %d-%d) does not show", k+1, m[0], b.from+1, b.to+1))
						break
					}
				}
			}
		}
	}
	return bad
}
