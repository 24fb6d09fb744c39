package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nslab/nslab/internal/loopback"
	"github.com/nslab/nslab/pktgen/metrics"
	"github.com/nslab/nslab/topology/lab"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// ServePage serves the live page of lab name on addr, sampled every
// interval, until ctx ends; it says where on w. The lab's namespaces are
// closed before it returns.
func ServePage(ctx context.Context, m *lab.Manager, name, addr string, interval time.Duration, w io.Writer) error {
	s, err := New(m, name, interval)
	if err != nil {
		return err
	}
	sampling, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Sample(sampling); close(done) }()
	defer func() { stop(); <-done; s.Close() }() // the sampler stops reading before the lab is closed
	return loopback.Serve(ctx, addr, s.Handler(), w, fmt.Sprintf("lab %s: http://%s/", name, addr))
}

// ServeMetrics serves /metrics of the labs named (none: every deployed
// lab) on addr until ctx ends, closing each lab's namespaces within a
// second of its destroy.
func ServeMetrics(ctx context.Context, m *lab.Manager, labs []string, addr string, w io.Writer) error {
	col := metrics.New(m, labs...)
	defer col.Close()
	pruning, stop := context.WithCancel(ctx)
	defer stop()
	go col.PruneEvery(pruning, time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	what := "every deployed lab"
	if len(labs) > 0 {
		what = fmt.Sprintf("labs %v", labs)
	}
	return loopback.Serve(ctx, addr, mux, w, fmt.Sprintf("the metrics of %s: http://%s/metrics", what, addr))
}

// WriteMetrics writes the metrics ServeMetrics serves, read once, to w in
// Prometheus's text format (what a coordinator gathers from each host of
// a lab that spans hosts).
func WriteMetrics(m *lab.Manager, labs []string, w io.Writer) error {
	col := metrics.New(m, labs...)
	defer col.Close()
	reg := prometheus.NewRegistry()
	if err := reg.Register(col); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("gather the metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("write the metrics: %w", err)
		}
	}
	return nil
}
