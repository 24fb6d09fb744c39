package events

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/bench/remote"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/walk"
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
	if err := Check(l, []Event{stop}, false); err != nil {
		t.Errorf("stop of node a: %v", err)
	}
	stop, _ = Parse("1s:stop:c")
	if err := Check(l, []Event{stop}, false); err == nil || !strings.Contains(err.Error(), "no node c") {
		t.Errorf("stop of no node: %v", err)
	}
}

// TestCheckElsewhere: on host a's part of a lab over hosts a and b, an
// event on b's node is refused, naming its host, unless the bench reaches
// the other hosts; an apply is refused then, since it changes every host.
func TestCheckElsewhere(t *testing.T) {
	whole, err := spec.Parse("x.yaml", []byte("name: x\nhosts:\n  a: {underlay: 192.0.2.1}\n  b: {underlay: 192.0.2.2}\nnodes:\n  n1: {host: a}\n  n2: {host: b}\nlinks:\n  - endpoints: [n1:e0, n2:e0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := whole.PartOf("a")
	if err != nil {
		t.Fatal(err)
	}
	down, _ := Parse("1s:down:n2:e0")
	if err := Check(l, []Event{down}, false); err == nil || !strings.Contains(err.Error(), "n2 is on host b") {
		t.Errorf("an event on host b's node, not reached: %v", err)
	}
	if err := Check(l, []Event{down}, true); err != nil {
		t.Errorf("an event on host b's node, reached: %v", err)
	}
	wrong, _ := Parse("1s:down:n2:e9")
	if err := Check(l, []Event{wrong}, true); err == nil || !strings.Contains(err.Error(), "no interface e9") {
		t.Errorf("an event on an interface n2 lacks: %v", err)
	}
	apply := Event{At: time.Second, Action: "apply", Apply: whole, text: "1s:apply:x.yaml"}
	if err := Check(l, []Event{apply}, true); err == nil || !strings.Contains(err.Error(), "spans hosts") {
		t.Errorf("an apply on a lab over hosts: %v", err)
	}
}

// TestDetourAcrossHosts: the detour is found among every host's
// interfaces, each one's tx less the control frames its link's other end
// (on another host) received; the path's interfaces and those that
// carried fewer than detourMin packets of the run are left out.
func TestDetourAcrossHosts(t *testing.T) {
	counted := map[string]remote.Counted{
		"r1:eth1": {Rx: 5, Tx: 900, Control: 5},    // on the path: left out
		"r1:eth2": {Rx: 12, Tx: 4012, Control: 12}, // host b: the way round
		"r2:eth0": {Rx: 4012, Tx: 12, Control: 12}, // host a, r1:eth2's other end
		"r2:eth1": {Rx: 10, Tx: 4010, Control: 10}, // host a
		"r3:eth1": {Rx: 4010, Tx: 10, Control: 10}, // host c
		"r3:eth9": {Rx: 150, Tx: 60, Control: 100}, // the daemons' own, and 60 sent: under detourMin
	}
	peer := map[string]string{"r1:eth2": "r2:eth0", "r2:eth0": "r1:eth2", "r2:eth1": "r3:eth1", "r3:eth1": "r2:eth1"}
	path := []walk.Hop{{Node: "r1", In: "eth0", Out: "eth1"}, {Node: "r3", In: "eth0", Out: "eth2"}}
	got := detour(counted, peer, path)
	want := []report.HopDelta{{Interface: "r1:eth2", Rx: 0, Tx: 4000}, {Interface: "r2:eth0", Rx: 4000, Tx: 0},
		{Interface: "r2:eth1", Rx: 0, Tx: 4000}, {Interface: "r3:eth1", Rx: 4000, Tx: 0}}
	if !slices.Equal(got, want) {
		t.Errorf("detour %+v, want %+v", got, want)
	}
}
