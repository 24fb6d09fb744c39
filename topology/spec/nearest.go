package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xrash/smetrics"
)

// Nearest is the name of names most like word (Jaro-Winkler similarity,
// as urfave/cli suggests verbs and flags: xrash/smetrics, the library it
// uses), "" when none is at least somewhat alike (0.7).
func Nearest(word string, names []string) string {
	best, score := "", 0.7
	for _, n := range names {
		if s := smetrics.JaroWinkler(word, n, 0.7, 4); s > score {
			best, score = n, s
		}
	}
	return best
}

// NearestOnly is Nearest when one name is more like word than every
// other, "" when two or more are as alike (ns4 among ns1, ns2 and ns3: a
// guess between them would mislead).
func NearestOnly(word string, names []string) string {
	best, score, tied := "", 0.7, false
	for _, n := range names {
		switch s := smetrics.JaroWinkler(word, n, 0.7, 4); {
		case s > score:
			best, score, tied = n, s, false
		case s == score && best != "":
			tied = true
		}
	}
	if tied {
		return ""
	}
	return best
}

// RunNames lists the file's traffic runs and groups, by name, in file
// order.
func (l *Lab) RunNames() []string {
	var out []string
	for _, t := range l.Traffic {
		if !slices.Contains(out, t.Name) {
			out = append(out, t.Name)
		}
		if t.Group != "" && !slices.Contains(out, t.Group) {
			out = append(out, t.Group)
		}
	}
	return out
}

// NoRun says the file has no traffic run or group name, with the
// nearest it has and all of them.
func (l *Lab) NoRun(name string) string {
	names := l.RunNames()
	msg := fmt.Sprintf("no traffic run or group %q", name)
	if n := Nearest(name, names); n != "" {
		msg += "; did you mean " + n + "?"
	}
	if len(names) > 0 {
		msg += " (its runs: " + strings.Join(names, ", ") + ")"
	}
	return msg
}
