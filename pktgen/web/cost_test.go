package web

import (
	"context"
	"encoding/json"
	"io"
	"syscall"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/metrics"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/watch"
	"github.com/nslab/nslab/topology/generate"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// cpuNs is this process's CPU time (user and system, every thread).
func cpuNs() int64 {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r) // cannot fail for RUSAGE_SELF
	return r.Utime.Nano() + r.Stime.Nano()
}

// samplerCost is the baseline's CPU per sample, from the sampler
// sub-benchmark of this run.
var samplerCost float64

// measure runs f b.N times and reports its CPU time per sample, and its
// ratio to the sampler's own; it returns the CPU time per sample.
func measure(b *testing.B, f func() error) float64 {
	c0 := cpuNs()
	b.ResetTimer()
	for range b.N {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	per := float64(cpuNs()-c0) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/sample")
	if samplerCost > 0 {
		b.ReportMetric(per/samplerCost, "x-sampler")
	}
	return per
}

// BenchmarkCost100 is what one sample of a lab of 100 interfaces (a
// chain of 51 nodes) costs each live view (make bench-live): the bench's
// sampler alone (the baseline: IFLA_STATS64 of each interface), top (a
// whole-lab reading with CPUs and each node's IP MIB and conntrack, the
// view and its table), web (the same, as the JSON event a page gets) and
// metrics (a scrape: a reading, gathered and encoded as OpenMetrics).
func BenchmarkCost100(b *testing.B) {
	if !labtest.Root() {
		b.Skip("needs root")
	}
	name := labtest.Name("lc")
	text, err := generate.Lab(generate.Options{Kind: "chain", N: 51, Name: name})
	if err != nil {
		b.Fatal(err)
	}
	l, err := spec.Parse("cost.yaml", labtest.Rename([]byte(text), name))
	if err != nil {
		b.Fatal(err)
	}
	m := &lab.Manager{StateDir: b.TempDir()}
	if _, err := m.Deploy(context.Background(), l); err != nil {
		b.Fatal(err)
	}
	defer m.Destroy(l.Name)
	w, err := watch.Open(m, l.Name)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if n := len(w.Targets()); n != 100 {
		b.Fatalf("%d interfaces, not 100", n)
	}
	b.Run("sampler", func(b *testing.B) { costSampler(b, m, l, w.Targets()) })
	b.Run("top", func(b *testing.B) { costView(b, w, func(v *watch.View) error { v.WriteTable(io.Discard); return nil }) })
	b.Run("web", func(b *testing.B) {
		costView(b, w, func(v *watch.View) error { _, err := json.Marshal(Message{Type: "view", View: v}); return err })
	})
	b.Run("metrics", func(b *testing.B) { costMetrics(b, m, l.Name) })
}

func costSampler(b *testing.B, m *lab.Manager, l *spec.Lab, targets []sample.Target) {
	r, err := m.Open(l)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	s, err := sample.New(r.Opened, targets)
	if err != nil {
		b.Fatal(err)
	}
	samplerCost = 0
	samplerCost = measure(b, func() error { _, err := s.Read(); return err })
}

func costView(b *testing.B, w *watch.Lab, render func(*watch.View) error) {
	prev, err := w.Read()
	if err != nil {
		b.Fatal(err)
	}
	_ = measure(b, func() error {
		cur, err := w.Read()
		if err != nil {
			return err
		}
		err, prev = render(w.Delta(prev, cur)), cur
		return err
	})
}

func costMetrics(b *testing.B, m *lab.Manager, name string) {
	col := metrics.New(m, name)
	defer col.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	_ = measure(b, func() error {
		fams, err := reg.Gather()
		if err != nil {
			return err
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeOpenMetrics))
		for _, f := range fams {
			if err := enc.Encode(f); err != nil {
				return err
			}
		}
		return nil
	})
}
