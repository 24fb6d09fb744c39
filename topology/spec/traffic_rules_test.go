package spec

import (
	"os"
	"strings"
	"testing"
)

func TestTrafficRules(t *testing.T) {
	base := string(mustSource(t))
	cases := trafficCases
	for _, c := range cases {
		y := strings.Replace(base, c.edit, c.where, 1)
		if y == base {
			t.Fatalf("edit %q did not apply", c.edit)
		}
		_, err := Parse("x.yaml", []byte(y))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("want %q, got %v", c.msg, err)
		}
	}
}

var trafficCases = []struct{ edit, where, msg string }{
	{"    rate: max\n", "    rate: lots\n", "rate \"lots\""},
	{"    duration: 10s\n", "", "give count: or duration:"},
	{"    to: 10.0.2.1\n    frame: 64\n", "    to: 10.0.2.1\n    frame: 40\n", "frame 40 bytes"},
	{"    from: ns1:veth1\n    to: 10.0.2.1\n    frame: 64\n", "    from: ns1:veth9\n    to: 10.0.2.1\n    frame: 64\n", "ns1:veth9 is not a linked interface"},
	{"    threads: 1\n", "    threads: 1\n    engine: dpdk\n", "engine \"dpdk\""},
	{"    threads: 1\n", "    threads: 1\n    src_ports: 9-1\n", "ports \"9-1\""},
	{"    threads: 1\n", "    threads: 1\n    engine: xdp\n    flows: 8\n", "engine xdp sends copies of one frame as fast as the device takes them: remove flows:"},
	{"    rate: max\n", "    rate: 100kpps\n    engine: xdp\n", "remove rate: or use engine userspace"},
	{"  - name: sweep ", "  - name: forward ", "traffic run \"forward\" is already defined"},
}

func mustSource(t *testing.T) []byte {
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}
