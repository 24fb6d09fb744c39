package spec

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// A frame mix (IMIX): one run whose frames have several sizes in given
// proportions, instead of one size per run. `frames: imix` is the classic
// simple IMIX, 7:4:1 of 64, 594 and 1518 bytes; `imix: [{size: 64,
// weight: 7}, ...]` any other.

// MixPart is one size of a mix and its weight.
type MixPart struct {
	Size   int // L2 frame size including FCS
	Weight int // packets of this size per cycle of the mix
}

// SimpleIMIX is the classic 7:4:1 mix.
var SimpleIMIX = []MixPart{{64, 7}, {594, 4}, {1518, 1}}

// Mix is a run's frame mix; nil: the run has one size (or a sweep).
type Mix []MixPart

// Mean is the mix's mean frame size in bytes (with FCS).
func (m Mix) Mean() float64 {
	var bytes, n int
	for _, p := range m {
		bytes += p.Size * p.Weight
		n += p.Weight
	}
	if n == 0 {
		return 0
	}
	return float64(bytes) / float64(n)
}

// Largest is the mix's largest frame.
func (m Mix) Largest() int {
	l := 0
	for _, p := range m {
		l = max(l, p.Size)
	}
	return l
}

// String is the mix as SIZE:WEIGHT words ("64:7 594:4 1518:1").
func (m Mix) String() string {
	w := make([]string, len(m))
	for i, p := range m {
		w[i] = fmt.Sprintf("%d:%d", p.Size, p.Weight)
	}
	return strings.Join(w, " ")
}

// trafficMix reads imix:, or frames: imix (f["frames"] a scalar).
func (r *reporter) trafficMix(f map[string]kv, t *Traffic) {
	if e, ok := f["frames"]; ok && e.v.Kind == yaml.ScalarNode {
		if e.v.Value != "imix" {
			r.errf(e.path, "frames %q: give a list of sizes, such as [64, 128, 1518], or imix (the 7:4:1 mix of 64, 594 and 1518 bytes)", e.v.Value)
			return
		}
		t.Mix = append(Mix(nil), SimpleIMIX...)
	}
	e, ok := f["imix"]
	if !ok {
		return
	}
	_, frame := f["frame"]
	_, frames := f["frames"]
	if frame || frames {
		r.errf(e.path, "give imix: or frame:/frames:, not both (a mix sends its own sizes; frames: would be ignored)")
		return
	}
	items, _ := r.list(e.v, e.path, "[{size: 64, weight: 7}, {size: 594, weight: 4}, {size: 1518, weight: 1}]")
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", e.path, i)
		pf := r.fields(it, p, "a mix part", keysOf(mixPartDef)...)
		var part MixPart
		if s, ok := pf["size"]; ok {
			part.Size, _ = r.integer(s.v, s.path, "the frame size in bytes", 1, 65535)
		} else {
			r.errf(p, "missing size: (the frame size in bytes, with FCS)")
		}
		part.Weight = 1
		if w, ok := pf["weight"]; ok {
			part.Weight, _ = r.integer(w.v, w.path, "packets of this size per cycle of the mix", 1, 1000)
		}
		t.Mix = append(t.Mix, part)
	}
	if len(t.Mix) == 0 {
		r.errf(e.path, "an empty mix: give at least one {size: N, weight: W}")
	}
}
