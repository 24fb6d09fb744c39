package spec

import (
	"os"
	"strings"
	"testing"
	"time"
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

// TestSegments: a segment is a node of its own with bridge br0 and a port
// for each endpoint, linked to it; a name taken, an empty list and a link
// of three endpoints are refused with their places.
func TestSegments(t *testing.T) {
	const lab = "name: s\nnodes:\n  a: {interfaces: {eth0: {addresses: [10.5.0.1/24]}}}\n  b: {interfaces: {eth0: {addresses: [10.5.0.2/24]}}}\n  c: {interfaces: {eth0: {addresses: [10.5.0.3/24]}, eth1: {addresses: [10.6.0.1/24]}}}\n" +
		"segments:\n  - {name: sw1, endpoints: [a:eth0, b:eth0, c:eth0]}\n  - {name: stub, endpoints: [c:eth1]}\n"
	l, err := Parse("s.yaml", []byte(lab))
	if err != nil {
		t.Fatal(err)
	}
	sw := l.Node("sw1")
	if sw == nil || !sw.Segment || len(sw.Bridges) != 1 || strings.Join(sw.Bridges[0].Ports, ",") != "p1,p2,p3" {
		t.Fatalf("segment sw1: %+v", sw)
	}
	var links []string
	for _, k := range l.Links {
		links = append(links, k.A.String()+"-"+k.B.String())
	}
	if got := strings.Join(links, " "); got != "a:eth0-sw1:p1 b:eth0-sw1:p2 c:eth0-sw1:p3 c:eth1-stub:p1" {
		t.Errorf("links %s", got)
	}
	for _, c := range []struct{ edit, msg string }{
		{strings.Replace(lab, "name: stub", "name: c", 1), `s.yaml:8:12: segments[1].name: "c" is already a node`},
		{strings.Replace(lab, "[c:eth1]", "[]", 1), "segments[1].endpoints: a segment has one endpoint or more"},
		{strings.Replace(lab, "segments:\n  - {name: sw1, endpoints: [a:eth0, b:eth0, c:eth0]}", "links:\n  - {endpoints: [a:eth0, b:eth0, c:eth0]}", 1), "a link has exactly 2 endpoints (a veth pair), not 3: for a shared segment of 3, write it under segments:"},
	} {
		if _, err := Parse("s.yaml", []byte(c.edit)); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("want %q, got %v", c.msg, err)
		}
	}
}

// TestTCPRun: tcp: makes a run TCP flows, with the run's duration or its
// own; what only UDP frames use, an unknown congestion control and a
// duration given twice are refused at their places.
func TestTCPRun(t *testing.T) {
	src := string(mustSource(t))
	run := "  - name: forward             # client -> router -> server, as the one-laptop test measures it\n    from: ns1:veth1\n    to: 10.0.2.1\n    frame: 64\n    duration: 10s\n    rate: max\n    threads: 1\n"
	if !strings.Contains(src, run) {
		t.Fatal("the example changed: fix the edit")
	}
	parse := func(tcp string) (*Lab, error) {
		return Parse("x.yaml", []byte(strings.Replace(src, run, "  - name: forward\n    from: ns1:veth1\n    to: 10.0.2.1\n"+tcp, 1)))
	}
	l, err := parse("    tcp: {flows: 4, cc: reno, duration: 3s}\n")
	if err != nil {
		t.Fatal(err)
	}
	if tr := l.TrafficRun("forward"); tr.TCP == nil || tr.TCP.Flows != 4 || tr.TCP.CC != "reno" || tr.Duration != 3*time.Second {
		t.Errorf("tcp: gave %+v, duration %v", tr.TCP, tr.Duration)
	}
	l, err = parse("    duration: 5s\n    tcp: {}\n")
	if err != nil {
		t.Fatal(err)
	}
	if tr := l.TrafficRun("forward"); tr.TCP == nil || tr.TCP.Flows != 1 || tr.TCP.CC != "" || tr.Duration != 5*time.Second {
		t.Errorf("tcp: {} gave %+v, duration %v", tr.TCP, tr.Duration)
	}
	for _, c := range []struct{ tcp, where, msg string }{
		{"    frame: 128\n    tcp: {duration: 2s}\n", "x.yaml:38:12: traffic[0].frame", "frame: is for UDP frames; a run with tcp: sends TCP flows: remove frame:"},
		{"    rate: 10Mbit\n    tcp: {duration: 2s}\n", "x.yaml:38:11: traffic[0].rate", "remove rate:"},
		{"    tcp: {cc: vegas, duration: 2s}\n", "x.yaml:38:15: traffic[0].tcp.cc", `cc "vegas": use cubic, bbr or reno`},
		{"    duration: 2s\n    tcp: {duration: 2s}\n", "x.yaml:39:21: traffic[0].tcp.duration", "give it once"},
		{"    tcp: {flows: 500, duration: 2s}\n", "x.yaml:38:18: traffic[0].tcp.flows", "between 1 and 128"},
		{"    tcp: {}\n", "traffic[0]", "give count: or duration:"},
	} {
		_, err := parse(c.tcp)
		if err == nil || !strings.Contains(err.Error(), c.where) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: got %v, want %s: %s", c.tcp, err, c.where, c.msg)
		}
	}
}

// TestFlowOfTCPRun: a TCP run's packets are traced as TCP to its sink's
// port (policy routing and firewalls may treat them apart from UDP).
func TestFlowOfTCPRun(t *testing.T) {
	udp := &Traffic{DstPorts: [2]int{53, 53}}
	tcp := &Traffic{DstPorts: [2]int{53, 53}, TCP: &TCP{Flows: 1}}
	if f := udp.Flow(); f.Proto != "udp" || f.Port != 53 {
		t.Errorf("UDP run: %+v", f)
	}
	if f := tcp.Flow(); f.Proto != "tcp" || f.Port != TCPPort {
		t.Errorf("TCP run: %+v", f)
	}
}
