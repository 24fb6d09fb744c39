package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Changes is what takes a lab built by one plan to what another builds:
// Undo, the first plan's steps taken back, in this order, then Do, the
// second's steps made; Rebuilt are the nodes made again whole.
type Changes[D any] struct {
	Undo, Do []Step[D]
	Rebuilt  []string
}

// Labs says which nodes each side of a comparison has.
type Labs struct {
	From, To func(node string) bool
}

// Compare compares plan a (the deployed lab's) with plan b (the file's)
// and returns the changes, with the nodes of rebuild made again whole. A
// step of a that b lacks is taken back; one of b that a lacks is made; a
// step both share is taken back and made again when an object it needs is
// taken away; a step taken back that has no undo rebuilds its nodes (an
// error when it names none); a daemon whose configuration changed is
// reloaded where its step can (Step.Reload).
func Compare[D any](a, b []Step[D], labs Labs, rebuild []string) (*Changes[D], error) {
	x := newDiff(a, b, labs, rebuild)
	for changed := true; changed; {
		more, err := x.rebuildWhatCannotBeUndone()
		if err != nil {
			return nil, err
		}
		changed = more
		changed = x.redoWhatLostItsObjects() || changed
		changed = x.markDestroyed() || changed
	}
	x.pairReloads()
	return x.changes(), nil
}

// diff is the comparison of two plans: a and b, the steps of a to take
// back and of b to make, by index.
type diff[D any] struct {
	labs      Labs
	a, b      []Step[D]
	inA, inB  map[string]int
	undo, do  map[int]bool
	rebuilt   map[string]bool // nodes made again whole
	destroyed map[string]bool // objects the steps taken back take away
}

func newDiff[D any](a, b []Step[D], labs Labs, rebuild []string) *diff[D] {
	x := &diff[D]{labs: labs, a: a, b: b, inA: map[string]int{}, inB: map[string]int{},
		undo: map[int]bool{}, do: map[int]bool{}, rebuilt: map[string]bool{}, destroyed: map[string]bool{}}
	for i, s := range x.a {
		x.inA[s.KeyOf()] = i
	}
	for i, s := range x.b {
		x.inB[s.KeyOf()] = i
	}
	for i, s := range x.a {
		if _, ok := x.inB[s.KeyOf()]; !ok {
			x.undo[i] = true
		}
	}
	for i, s := range x.b {
		if _, ok := x.inA[s.KeyOf()]; !ok {
			x.do[i] = true
		}
	}
	for _, n := range rebuild {
		x.rebuilt[n] = true
	}
	return x
}

// gone reports whether an object a step needs is taken away: its node
// goes (removed or rebuilt), or a step taken back made it ("N:*": any of
// N's interfaces).
func (x *diff[D]) gone(need string) bool {
	node := NodeOf(need)
	if x.rebuilt[node] || !x.labs.To(node) {
		return true
	}
	if p, ok := strings.CutSuffix(need, ":*"); ok {
		for obj := range x.destroyed {
			if strings.HasPrefix(obj, p+":") {
				return true
			}
		}
		return false
	}
	return x.destroyed[need]
}

// rebuildWhatCannotBeUndone marks for rebuilding the nodes of the steps
// taken back that have no undo; it reports whether it marked any.
func (x *diff[D]) rebuildWhatCannotBeUndone() (bool, error) {
	changed := false
	for i := range x.undo {
		s := x.a[i]
		if s.Undo != nil || s.NoUndo {
			continue
		}
		if len(s.Needs) == 0 {
			return false, fmt.Errorf("apply cannot take back %q on a running lab: destroy the lab and deploy the file", s.Name)
		}
		for _, need := range s.Needs {
			if n := NodeOf(need); !x.rebuilt[n] {
				x.rebuilt[n], changed = true, true
			}
		}
	}
	return changed, nil
}

// redoWhatLostItsObjects takes back and makes again each step the two
// plans share that needs an object taken away, or is the namespace of a
// node rebuilt; it reports whether it found any.
func (x *diff[D]) redoWhatLostItsObjects() bool {
	changed := false
	for i, s := range x.a {
		j, kept := x.inB[s.KeyOf()]
		if x.undo[i] || !kept {
			continue
		}
		if slices.ContainsFunc(s.Needs, x.gone) || s.IsNamespace() && x.rebuilt[s.Makes[0]] {
			x.undo[i], x.do[j], changed = true, true, true
		}
	}
	return changed
}

// markDestroyed adds the objects of the steps taken back to those taken
// away; it reports whether there were new ones.
func (x *diff[D]) markDestroyed() bool {
	changed := false
	for i := range x.undo {
		for _, obj := range x.a[i].Makes {
			if !x.destroyed[obj] {
				x.destroyed[obj], changed = true, true
			}
		}
	}
	return changed
}

// pairReloads replaces each pair of a step taken back and one made that
// make the same object and can reload (a daemon whose configuration
// changed) by the made one's reload, taken back by the old one's.
func (x *diff[D]) pairReloads() {
	for i := range x.undo {
		old := x.a[i]
		if old.Reload == nil || len(old.Makes) == 0 {
			continue
		}
		for j := range x.do {
			nw := x.b[j]
			if nw.Reload == nil || len(nw.Makes) == 0 || nw.Makes[0] != old.Makes[0] || slices.ContainsFunc(old.Needs, x.gone) {
				continue
			}
			delete(x.undo, i)
			r := *nw.Reload
			r.Undo, r.Needs = old.Reload.Do, nw.Needs
			x.b[j] = r
			break
		}
	}
}

// changes orders the steps: those taken back newest first, those made in
// plan order (with the steps that follow what is made: Step.Follows).
func (x *diff[D]) changes() *Changes[D] {
	for j, s := range x.b {
		if s.Follows != "" && x.makesAny(s.Follows) {
			x.do[j] = true
		}
	}
	c := &Changes[D]{}
	// Steps with nothing to take back are listed too: a failed apply's
	// taking back makes them again where it makes their node again.
	for i := len(x.a) - 1; i >= 0; i-- {
		if x.undo[i] {
			c.Undo = append(c.Undo, x.a[i])
		}
	}
	for j, s := range x.b {
		if x.do[j] {
			c.Do = append(c.Do, s)
		}
	}
	for n := range x.rebuilt {
		if x.labs.From(n) && x.labs.To(n) {
			c.Rebuilt = append(c.Rebuilt, n)
		}
	}
	slices.Sort(c.Rebuilt)
	return c
}

// makesAny reports whether a step made makes an object whose name
// contains part.
func (x *diff[D]) makesAny(part string) bool {
	for j := range x.do {
		for _, o := range x.b[j].Makes {
			if strings.Contains(o, part) {
				return true
			}
		}
	}
	return false
}
