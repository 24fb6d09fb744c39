package events

import (
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/spec"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]Event{
		"2s:down:r1:eth1": {At: 2 * time.Second, Action: "down", Where: spec.Endpoint{Node: "r1", Interface: "eth1"}},
		"2s:stop:r1":      {At: 2 * time.Second, Action: "stop", Where: spec.Endpoint{Node: "r1"}},
		"1500ms:start:r1": {At: 1500 * time.Millisecond, Action: "start", Where: spec.Endpoint{Node: "r1"}},
	} {
		got, err := Parse(s)
		if err != nil || got.At != want.At || got.Action != want.Action || got.Where != want.Where || got.String() != s {
			t.Errorf("%s: %+v %v", s, got, err)
		}
	}
	for s, msg := range map[string]string{
		"2s:stop:r1:eth1": "takes a node alone: 2s:stop:r1",
		"2s:stop":         "TIME:stop|start:NODE",
		"x:stop:r1":       "not a time",
		"2s:halt:r1:eth1": "not down, up, impair, clear, stop or start",
		"2s:apply:/none":  "/none",
	} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", s, err, msg)
		}
	}
	l, err := spec.Parse("x.yaml", []byte("name: x\nnodes:\n  a: {}\n  b: {}\nlinks:\n  - endpoints: [a:e0, b:e0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := Parse("1s:stop:a")
	if err := Check(l, []Event{stop}); err != nil {
		t.Errorf("stop of node a: %v", err)
	}
	stop, _ = Parse("1s:stop:c")
	if err := Check(l, []Event{stop}); err == nil || !strings.Contains(err.Error(), "no node c") {
		t.Errorf("stop of no node: %v", err)
	}
}
