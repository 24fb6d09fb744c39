package plan

import (
	"slices"
	"testing"
)

type run struct{}

func undo(run) error { return nil }

// step is a step with key k that makes and needs the objects given, and
// can be taken back.
func step(k string, makes, needs []string) Step[run] {
	return Step[run]{Name: k, Key: k, Makes: makes, Needs: needs, Undo: undo, Do: undo}
}

func names(steps []Step[run]) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func nodes(ns ...string) func(string) bool {
	return func(n string) bool { return slices.Contains(ns, n) }
}

// TestCompare: what changes is taken back and made, newest first and in
// plan order; what needs an object taken away is redone; a step without
// an undo rebuilds its node; a reloadable step is reloaded; a step that
// follows links is made again when a link is.
func TestCompare(t *testing.T) {
	ns := func(n string) Step[run] { return step("ns "+n, []string{n}, nil) }
	link := step("link a:e0", []string{"a:e0", "b:e0"}, []string{"a", "b"})
	addr := func(v string) Step[run] { return step("addr "+v+" a:e0", nil, []string{"a:e0"}) }
	wait := step("wait", nil, nil)
	wait.Follows = ":"
	base := []Step[run]{ns("a"), ns("b"), link, addr("1"), wait}
	labs := Labs{From: nodes("a", "b"), To: nodes("a", "b")}

	same, err := Compare(base, base, labs, nil)
	if err != nil || len(same.Undo)+len(same.Do)+len(same.Rebuilt) != 0 {
		t.Fatalf("the same plan: %+v %v", same, err)
	}
	edited := []Step[run]{ns("a"), ns("b"), link, addr("2"), wait}
	c, err := Compare(base, edited, labs, nil)
	if err != nil || !slices.Equal(names(c.Undo), []string{"addr 1 a:e0"}) || !slices.Equal(names(c.Do), []string{"addr 2 a:e0"}) {
		t.Fatalf("a changed address: undo %v do %v %v", names(c.Undo), names(c.Do), err)
	}
	// The link made differently: its address (kept) needs it, so it is
	// redone, and the wait follows the new link.
	link2 := step("link a:e0 mtu 9000", []string{"a:e0", "b:e0"}, []string{"a", "b"})
	c, err = Compare(base, []Step[run]{ns("a"), ns("b"), link2, addr("1"), wait}, labs, nil)
	if err != nil || !slices.Equal(names(c.Undo), []string{"addr 1 a:e0", "link a:e0"}) || !slices.Equal(names(c.Do), []string{"link a:e0 mtu 9000", "addr 1 a:e0", "wait"}) {
		t.Fatalf("a changed link: undo %v do %v %v", names(c.Undo), names(c.Do), err)
	}
	// A step that cannot be taken back rebuilds its node: every step of
	// the node is made again.
	exec := step("exec in b", nil, []string{"b"})
	exec.Undo = nil
	c, err = Compare(append(slices.Clone(base), exec), base, labs, nil)
	if err != nil || !slices.Equal(c.Rebuilt, []string{"b"}) || !slices.Contains(names(c.Do), "ns b") || !slices.Contains(names(c.Do), "link a:e0") {
		t.Fatalf("an exec line removed: rebuilt %v do %v %v", c.Rebuilt, names(c.Do), err)
	}
	anon := step("exec anywhere", nil, nil)
	anon.Undo = nil
	if _, err := Compare([]Step[run]{anon}, nil, labs, nil); err == nil {
		t.Fatal("a step with no undo and no node was taken back")
	}
	// A daemon's new configuration is reloaded, not restarted.
	daemon := func(conf string) Step[run] {
		s := step("frr "+conf, []string{"b/frr"}, []string{"b"})
		s.Reload = &Step[run]{Name: "reload frr in b", Do: undo}
		return s
	}
	c, err = Compare(append(slices.Clone(base), daemon("1")), append(slices.Clone(base), daemon("2")), labs, nil)
	if err != nil || len(c.Undo) != 0 || !slices.Equal(names(c.Do), []string{"reload frr in b"}) || c.Do[0].Undo == nil {
		t.Fatalf("a changed daemon config: undo %v do %v %v", names(c.Undo), names(c.Do), err)
	}
	// A removed node: its steps go, its namespace's last.
	c, err = Compare(base, []Step[run]{ns("a")}, Labs{From: nodes("a", "b"), To: nodes("a")}, nil)
	if err != nil || !slices.Equal(names(c.Undo), []string{"wait", "addr 1 a:e0", "link a:e0", "ns b"}) {
		t.Fatalf("a removed node: undo %v %v", names(c.Undo), err)
	}
}

// TestSkipUndo: a step inside a node that goes is not taken back on its
// own; the node's namespace is.
func TestSkipUndo(t *testing.T) {
	going := map[string]bool{"b": true}
	if !SkipUndo(step("addr b:e0", nil, []string{"b:e0"}), going) || SkipUndo(step("ns b", []string{"b"}, nil), going) || SkipUndo(step("addr a:e0", nil, []string{"a:e0"}), going) {
		t.Fatal("SkipUndo")
	}
}
