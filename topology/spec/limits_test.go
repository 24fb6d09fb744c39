package spec

import "testing"

const limited = `name: x
nodes:
  a:
    limits: {cpu: 50%, memory: 256MiB, pids: 100}
    run: ["sleep 1000"]
  b: {}
links:
  - endpoints: [a:e0, b:e0]
`

func TestLimits(t *testing.T) {
	l, err := Parse("x.yaml", []byte(limited))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Node("a").Limits; got == nil || *got != (Limits{CPU: 50, Memory: 256 << 20, Pids: 100}) || l.Node("b").Limits != nil {
		t.Fatalf("parsed limits %+v, b %+v", got, l.Node("b").Limits)
	}
	for _, c := range []struct{ name, from, to, where, msg string }{
		{"cpu without %", "cpu: 50%", "cpu: 0.5", "x.yaml:4:19: nodes.a.limits.cpu", "percentage of one CPU"},
		{"memory without unit", "memory: 256MiB", "memory: 256", "x.yaml:4:32: nodes.a.limits.memory", "such as 256MiB"},
		{"memory too small", "memory: 256MiB", "memory: 4KiB", "x.yaml:4:32: nodes.a.limits.memory", "below 1MiB"},
		{"pids zero", "pids: 100", "pids: 0", "x.yaml:4:46: nodes.a.limits.pids", "between 1 and"},
		{"unknown key", "pids: 100", "cpus: 2", "x.yaml:4:40: nodes.a.limits.cpus", "did you mean \"cpu\""},
		{"empty", "{cpu: 50%, memory: 256MiB, pids: 100}", "{}", "x.yaml:4:13: nodes.a.limits", "limits nothing"},
	} {
		t.Run(c.name, func(t *testing.T) { problemAfterEdit(t, limited, c.from, c.to, c.where, c.msg) })
	}
}
