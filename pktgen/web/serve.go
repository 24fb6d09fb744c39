package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/loopback"
	"github.com/nslab/nslab/pktgen/metrics"
	"github.com/nslab/nslab/topology/graph"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
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

// ServeFed serves the live page of l, a lab that spans hosts, on addr
// until ctx ends or in does: its views are read from in, one Message in
// JSON per line, as the coordinator of the lab joins them from every
// host's agent (nslab web FILE). It serves no /metrics: nslab metrics
// FILE gathers the hosts' own.
func ServeFed(ctx context.Context, l *spec.Lab, addr string, interval time.Duration, in io.Reader, w io.Writer) error {
	s := newFed(l, interval)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { s.Feed(in); cancel() }()
	return loopback.Serve(ctx, addr, s.Handler(), w, fmt.Sprintf("lab %s on hosts %s: http://%s/", l.Name, strings.Join(l.HostNames(), ", "), addr))
}

// newFed is the page of l whose views come from Feed.
func newFed(l *spec.Lab, interval time.Duration) *Server {
	return &Server{name: l.Name, interval: interval, fed: true, svg: graph.SVG(graph.Build(l)), clients: map[chan []byte]bool{}}
}

// Feed hands each Message read from in (one JSON object per line) to
// every page, until in ends; a line that does not parse is sent as an
// error.
func (s *Server) Feed(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = Message{Type: "error", Error: "a view that does not parse: " + err.Error()}
		}
		s.send(m)
	}
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
