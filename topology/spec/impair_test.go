package spec

import (
	"math"
	"strings"
	"testing"
	"time"
)

const impaired = `name: t
nodes:
  a:
    interfaces:
      e0: {addresses: [10.0.1.1/24], impair: {delay: 20ms, jitter: 5ms, loss: 1%, duplicate: 0.1%, reorder: 1%, corrupt: 0.1%, rate: 10Mbit, limit: 500}}
  b:
    interfaces:
      e0: {addresses: [10.0.1.2/24], impair: {rate: 20Mbit}}
links:
  - endpoints: [a:e0, b:e0]
`

// TestImpairRules parses a full impairment and has one case per rule, with
// its place.
func TestImpairRules(t *testing.T) {
	l, err := Parse("x.yaml", []byte(impaired))
	if err != nil {
		t.Fatal(err)
	}
	a, b := l.Node("a").Interface("e0").Impair, l.Node("b").Interface("e0").Impair
	want := Impair{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 1, Duplicate: 0.1, Reorder: 1, Corrupt: 0.1, Rate: 10e6, Limit: 500}
	if a == nil || *a != want || a.Qdisc() != "netem" {
		t.Fatalf("a:e0 impair = %+v", a)
	}
	if got := a.String(); got != "delay 20ms 5ms loss 1% duplicate 0.1% reorder 1% corrupt 0.1% rate 10Mbit limit 500" {
		t.Errorf("String() = %q", got)
	}
	if b == nil || b.Rate != 20e6 || b.Qdisc() != "tbf" || b.QueueLimit() != DefaultImpairLimit {
		t.Fatalf("b:e0 impair = %+v", b)
	}
	cases := impairCases
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { problemAfterEdit(t, impaired, c.from, c.to, c.where, c.msg) })
	}
}

var impairCases = []struct {
	name, from, to string
	where, msg     string
}{
	{"unknown key", "limit: 500", "limt: 500", "x.yaml:5:142: nodes.a.interfaces.e0.impair.limt", `did you mean "limit"`},
	{"delay syntax", "delay: 20ms", "delay: 20", "x.yaml:5:54: nodes.a.interfaces.e0.impair.delay", "a duration such as 20ms"},
	{"negative delay", "delay: 20ms", "delay: -2ms", "x.yaml:5:54: nodes.a.interfaces.e0.impair.delay", "a duration"},
	{"loss without %", "loss: 1%", "loss: 1", "x.yaml:5:79: nodes.a.interfaces.e0.impair.loss", "a percentage"},
	{"loss over 100", "loss: 1%", "loss: 101%", "x.yaml:5:79: nodes.a.interfaces.e0.impair.loss", "between 0% and 100%"},
	{"rate bytes trap", "rate: 20Mbit", "rate: 20Mbps", "x.yaml:8:53: nodes.b.interfaces.e0.impair.rate", "write 20Mbit"},
	{"rate unit", "rate: 20Mbit", "rate: fast", "x.yaml:8:53: nodes.b.interfaces.e0.impair.rate", "10Mbit"},
	{"limit range", "limit: 500", "limit: 0", "x.yaml:5:149: nodes.a.interfaces.e0.impair.limit", "between 1 and"},
	{"jitter without delay", "delay: 20ms, ", "", "x.yaml:5:55: nodes.a.interfaces.e0.impair.jitter", "set delay too"},
	{"jitter over delay", "jitter: 5ms", "jitter: 50ms", "x.yaml:5:68: nodes.a.interfaces.e0.impair.jitter", "larger than delay"},
	{"reorder without delay", "delay: 20ms, jitter: 5ms, ", "", "x.yaml:5:83: nodes.a.interfaces.e0.impair.reorder", "set a delay too"},
	{"does nothing", "impair: {rate: 20Mbit}", "impair: {limit: 10}", "x.yaml:8:46: nodes.b.interfaces.e0.impair", "does nothing"},
	{"on lo", "  b:\n    interfaces:\n", "  b:\n    interfaces:\n      lo: {impair: {delay: 1ms}}\n", "x.yaml:8:20: nodes.b.interfaces.lo.impair", "lo carries no lab link"},
	{"type", "impair: {rate: 20Mbit}", "impair: 20Mbit", "x.yaml:8:46: nodes.b.interfaces.e0.impair", "must be a mapping"},
}

// TestProgramRules: a node's exec: and run: are lists of command lines,
// with their place when they are not.
func TestProgramRules(t *testing.T) {
	src := strings.Replace(impaired, "  b:\n", "  b:\n    exec: [\"sysctl -a\"]\n    run: [\"iperf3 -s\", \"python3 -m http.server 80\"]\n", 1)
	l, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if b := l.Node("b"); len(b.Exec) != 1 || len(b.Run) != 2 || b.Run[1] != "python3 -m http.server 80" {
		t.Fatalf("exec %q run %q", b.Exec, b.Run)
	}
	for _, c := range []struct{ name, from, to, where, msg string }{
		{"run not a list", `run: ["iperf3 -s", "python3 -m http.server 80"]`, `run: iperf3 -s`, "x.yaml:8:10: nodes.b.run", "must be a list"},
		{"empty command", `exec: ["sysctl -a"]`, `exec: ["  "]`, "x.yaml:7:12: nodes.b.exec[0]", "an empty command"},
		{"command type", `exec: ["sysctl -a"]`, `exec: [{a: b}]`, "x.yaml:7:12: nodes.b.exec[0]", "must be a command line"},
	} {
		y := strings.Replace(src, c.from, c.to, 1)
		_, err := Parse("x.yaml", []byte(y))
		if err == nil || !strings.Contains(err.Error(), c.where) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: want %q at %q, got %v", c.name, c.msg, c.where, err)
		}
	}
}

// TestQueue: qdisc: is a kind alone or a kind with the settings it takes;
// every other form is refused at its place.
func TestQueue(t *testing.T) {
	src := string(mustSource(t))
	from := "veth2: {addresses: [10.0.2.254/24]}"
	parse := func(q string) (*Lab, error) {
		return Parse("x.yaml", []byte(strings.Replace(src, from, "veth2: {addresses: [10.0.2.254/24], "+q+"}", 1)))
	}
	for q, want := range map[string]string{
		"qdisc: fq_codel": "fq_codel",
		"impair: {rate: 5Mbit}, qdisc: {kind: fq_codel, target: 5ms, interval: 100ms, limit: 1000}": "fq_codel limit 1000 target 5ms interval 100ms",
		"qdisc: {kind: pfifo, limit: 1000}":             "pfifo limit 1000",
		"qdisc: {kind: htb, rate: 5Mbit, ceil: 10Mbit}": "htb rate 5Mbit ceil 10Mbit",
		"qdisc: {kind: cake, bandwidth: 5Mbit}":         "cake bandwidth 5Mbit",
	} {
		l, err := parse(q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if got := l.Node("ns2").Interface("veth2").Queue; got == nil || got.String() != want {
			t.Errorf("%s: %v, want %s", q, got, want)
		}
	}
	for _, c := range []struct{ q, where, msg string }{
		{"qdisc: sfq", "x.yaml:25:50: nodes.ns2.interfaces.veth2.qdisc", `qdisc "sfq": use pfifo, fq_codel, fq, cake, htb`},
		{"qdisc: {kind: pfifo, target: 5ms}", "nodes.ns2.interfaces.veth2.qdisc.target", "pfifo takes no target: (it takes limit)"},
		{"qdisc: {kind: htb}", "nodes.ns2.interfaces.veth2.qdisc", "htb needs rate:"},
		{"qdisc: {kind: htb, rate: 5Mbit, ceil: 1Mbit}", "nodes.ns2.interfaces.veth2.qdisc.ceil", "ceil 1Mbit is below rate 5Mbit"},
		{"qdisc: {limit: 5}", "nodes.ns2.interfaces.veth2.qdisc", "missing kind:"},
		{"qdisc: {kind: fq_codel, target: soon}", "nodes.ns2.interfaces.veth2.qdisc.target", `target "soon"`},
	} {
		_, err := parse(c.q)
		if err == nil || !strings.Contains(err.Error(), c.where) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %s: %s", c.q, err, c.where, c.msg)
		}
	}
}

// TestBurstyLoss: loss: {mean, burst} is netem's Gilbert-Elliott model
// with p and r derived from them (r = 1/burst, p = r·mean/(1-mean)); its
// mistakes are refused at their places.
func TestBurstyLoss(t *testing.T) {
	src := string(mustSource(t))
	from := "veth2: {addresses: [10.0.2.254/24]}"
	parse := func(m string) (*Lab, error) {
		return Parse("x.yaml", []byte(strings.Replace(src, from, "veth2: {addresses: [10.0.2.254/24], impair: "+m+"}", 1)))
	}
	l, err := parse("{loss: {mean: 5%, burst: 4}, delay: 10ms}")
	if err != nil {
		t.Fatal(err)
	}
	m := l.Node("ns2").Interface("veth2").Impair
	if m.Loss != 5 || m.LossBurst != 4 || m.String() != "delay 10ms loss 5% burst 4" {
		t.Errorf("bursty loss: %+v (%s)", m, m)
	}
	if p, r := GELoss(5, 4); r != 25 || math.Abs(p-25*5.0/95) > 1e-12 || math.Abs(100*p/(p+r)-5) > 1e-9 {
		t.Errorf("GELoss(5%%, 4) = p %v r %v: want r 25%%, a mean of p/(p+r) = 5%%", p, r)
	}
	for _, c := range []struct{ m, where, msg string }{
		{"{loss: {mean: 5%}}", "nodes.ns2.interfaces.veth2.impair.loss", "missing burst:"},
		{"{loss: {mean: 5%, burst: 0.5}}", "nodes.ns2.interfaces.veth2.impair.loss.burst", `burst "0.5": the mean number of packets lost in a row, 1 or more`},
		{"{loss: {mean: 0%, burst: 3}}", "nodes.ns2.interfaces.veth2.impair.loss.mean", "give more than 0% and less than 100%"},
		{"{loss: {mean: 5%, burst: 3, spread: 2}}", "nodes.ns2.interfaces.veth2.impair.loss.spread", "spread"},
	} {
		if _, err := parse(c.m); err == nil || !strings.Contains(err.Error(), c.where) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %s: %s", c.m, err, c.where, c.msg)
		}
	}
	var cli Impair
	if err := cli.Set("burst", "0"); err == nil {
		t.Error("--burst 0 was taken")
	}
	if err := cli.Set("burst", "4"); err != nil || cli.LossBurst != 4 {
		t.Errorf("--burst 4: %v %v", cli.LossBurst, err)
	}
	if key, _ := cli.Problem(); key != "burst" {
		t.Errorf("--burst without --loss: problem %q", key)
	}
}
