package spec

import (
	"strings"
	"testing"
)

func TestDerivedMACs(t *testing.T) {
	taken := DerivedMAC("m", Endpoint{"a", "e0"}, 0)
	src := `
name: m
nodes:
  a: {interfaces: {e0: {}, e1: {}}}
  b: {interfaces: {e0: {}, e1: {mac: "` + taken.String() + `"}}}
links:
  - endpoints: [a:e0, b:e0]
  - endpoints: [a:e1, b:e1]
`
	parse := func() *Lab {
		l, err := Parse("m.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l1, l2 := parse(), parse()
	seen := map[string]string{}
	for _, n := range l1.Nodes {
		for _, i := range n.Interfaces {
			if i.MAC == nil {
				t.Fatalf("%s:%s has no MAC", n.Name, i.Name)
			}
			if i.MAC[0]&1 != 0 || i.MAC[0]&2 == 0 {
				t.Errorf("%s:%s: %s is not locally administered unicast", n.Name, i.Name, i.MAC)
			}
			if other, dup := seen[i.MAC.String()]; dup {
				t.Errorf("%s:%s repeats the MAC of %s", n.Name, i.Name, other)
			}
			seen[i.MAC.String()] = n.Name + ":" + i.Name
			if again := l2.Node(n.Name).Interface(i.Name).MAC; again.String() != i.MAC.String() {
				t.Errorf("%s:%s: %s, then %s from the same file", n.Name, i.Name, i.MAC, again)
			}
		}
	}
	if got := l1.Node("a").Interface("e0"); got.MAC.String() == taken.String() || !got.MACDerived {
		t.Errorf("a:e0 = %s (derived %v); it must avoid %s, which b:e1 declares", got.MAC, got.MACDerived, taken)
	}
	if l1.Node("b").Interface("e1").MACDerived {
		t.Error("b:e1's MAC is from the file, not derived")
	}
	other, err := Parse("m.yaml", []byte(strings.Replace(src, "name: m", "name: other", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if other.Node("a").Interface("e1").MAC.String() == l1.Node("a").Interface("e1").MAC.String() {
		t.Error("two labs derive the same MAC for a:e1")
	}
}
