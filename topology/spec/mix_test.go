package spec

import (
	"strings"
	"testing"
)

// TestMix: frames: imix is the 7:4:1 mix, imix: any other; the run's
// Frames is the mix's largest size, once; flows: spreads source ports.
func TestMix(t *testing.T) {
	src := string(mustSource(t))
	l, err := Parse("x.yaml", []byte(strings.Replace(src, "    to: 10.0.2.1\n    frame: 64\n", "    to: 10.0.2.1\n    frames: imix\n    flows: 64\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	tr := l.TrafficRun("forward")
	if tr.Mix.String() != "64:7 594:4 1518:1" || len(tr.Frames) != 1 || tr.Frames[0] != 1518 || tr.Mix.Mean() < 361.8 || tr.Mix.Mean() > 361.9 {
		t.Errorf("frames: imix gave mix %q (mean %.2f), frames %v", tr.Mix, tr.Mix.Mean(), tr.Frames)
	}
	if tr.SrcPorts != [2]int{FlowPortBase, FlowPortBase + 63} {
		t.Errorf("flows: 64 gave source ports %v", tr.SrcPorts)
	}
	l, err = Parse("x.yaml", []byte(strings.Replace(src, "    frame: 64\n", "    imix: [{size: 128, weight: 3}, {size: 1024}]\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if m := l.TrafficRun("forward").Mix; m.String() != "128:3 1024:1" {
		t.Errorf("imix: gave %q", m)
	}
}

// mixCases are the rules of a mix, each with its place in the file.
var mixCases = []struct{ name, from, to, where, msg string }{
	{"frames word", "    frame: 64\n", "    frames: lots\n", "x.yaml:38:13: traffic[0].frames", `frames "lots": give a list of sizes`},
	{"mix and frame", "    frame: 64\n", "    frame: 64\n    imix: [{size: 64}]\n", "x.yaml:39:11: traffic[0].imix", "give imix: or frame:/frames:, not both"},
	{"mix size", "    frame: 64\n", "    imix: [{size: 40, weight: 1}]\n", "x.yaml:38:19: traffic[0].imix[0].size", "frame 40 bytes"},
	{"mix weight", "    frame: 64\n", "    imix: [{size: 64, weight: 0}]\n", "x.yaml:38:31: traffic[0].imix[0].weight", "between 1 and 1000"},
	{"mix no size", "    frame: 64\n", "    imix: [{weight: 2}]\n", "x.yaml:38:12: traffic[0].imix[0]", "missing size:"},
	{"mix unknown key", "    frame: 64\n", "    imix: [{size: 64, wieght: 2}]\n", "x.yaml:38:23: traffic[0].imix[0].wieght", `did you mean "weight"`},
	{"mix and frames", "    frame: 64\n", "    frames: [64, 128]\n    imix: [{size: 64}]\n", "x.yaml:39:11: traffic[0].imix", "give imix: or frame:/frames:, not both"},
	{"more flows than ports", "    frame: 64\n", "    frame: 64\n    flows: 64\n    src_ports: 1000-1010\n", "x.yaml:39:12: traffic[0].flows", "flows: 64 but the ports give at most 11 distinct port pairs"},
	{"ranges in step", "    frame: 64\n", "    frame: 64\n    flows: 12\n    src_ports: 1000-1009\n    dst_ports: 2000-2009\n", "x.yaml:39:12: traffic[0].flows", "at most 10 distinct port pairs"},
	{"mix empty", "    frame: 64\n", "    imix: []\n", "x.yaml:38:11: traffic[0].imix", "an empty mix"},
}

// TestFlowsThatFit: flows within what the port ranges give are taken.
func TestFlowsThatFit(t *testing.T) {
	src := string(mustSource(t))
	for _, keys := range []string{"flows: 11\n    src_ports: 1000-1010\n", "flows: 20\n    src_ports: 1000-1003\n    dst_ports: 2000-2004\n", "flows: 64\n    dst_ports: 2000-2001\n"} {
		y := strings.Replace(src, "    frame: 64\n", "    frame: 64\n    "+keys, 1)
		if _, err := Parse("x.yaml", []byte(y)); err != nil {
			t.Errorf("%q: %v", keys, err)
		}
	}
}

func TestMixRules(t *testing.T) {
	src := string(mustSource(t))
	for _, c := range mixCases {
		t.Run(c.name, func(t *testing.T) { problemAfterEdit(t, src, c.from, c.to, c.where, c.msg) })
	}
}
