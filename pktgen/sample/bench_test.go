package sample

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// BenchmarkRead10 is the sampler's own cost (make bench-sampler): one
// sample of 10 interfaces in 6 namespaces, as wall time and as CPU time
// (user+system) per sample.
func BenchmarkRead10(b *testing.B) {
	if !labtest.Root() {
		b.Skip("needs root")
	}
	name := labtest.Name("sb")
	var y strings.Builder
	fmt.Fprintf(&y, "name: %s\nprefix: %s-\nnodes:\n", name, name)
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&y, "  n%d:\n    interfaces:\n", i)
		if i > 0 {
			fmt.Fprintf(&y, "      l: {}\n")
		}
		if i < 5 {
			fmt.Fprintf(&y, "      r: {}\n")
		}
	}
	y.WriteString("links:\n")
	var targets []Target
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&y, "  - endpoints: [n%d:r, n%d:l]\n", i, i+1)
		targets = append(targets, Target{Node: fmt.Sprintf("n%d", i), Namespace: fmt.Sprintf("%s-n%d", name, i), Interface: "r"},
			Target{Node: fmt.Sprintf("n%d", i+1), Namespace: fmt.Sprintf("%s-n%d", name, i+1), Interface: "l"})
	}
	l, err := spec.Parse("bench.yaml", []byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	m := &lab.Manager{StateDir: b.TempDir()}
	if _, err := m.Deploy(context.Background(), l); err != nil {
		b.Fatal(err)
	}
	defer m.Destroy(l.Name)
	r, err := m.Open(l)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	s, err := New(r.Opened, targets)
	if err != nil {
		b.Fatal(err)
	}
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := (r1.Utime.Nano() - r0.Utime.Nano()) + (r1.Stime.Nano() - r0.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/sample")
	b.ReportMetric(float64(cpu)/float64(b.N)/1e9*100, "%cpu-at-1s-interval")
}
