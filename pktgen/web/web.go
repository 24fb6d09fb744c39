// Package web serves the live view of a deployed lab: a page with the
// lab's drawing (graph.SVG), whose links are labelled and coloured by
// their live rates each way, with badges at the interfaces that drop and
// nodes coloured by their CPUs' use; a chart per link of the last
// minutes; the bench that runs on the lab, its verdicts, what it measured
// and its report when it ends; all fed by server-sent events, one view
// per interval. It serves the lab's metrics (package metrics) at /metrics. Its
// assets are embedded: the page asks nothing of any other address.
//
// One goroutine samples the lab (package watch) every interval and hands
// each view to every connected page. When the lab is destroyed it closes
// the lab's namespaces at once, tells the pages, and looks for the lab to
// be deployed again.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sync"
	"time"

	"github.com/nslab/nslab/pktgen/metrics"
	"github.com/nslab/nslab/pktgen/watch"
	"github.com/nslab/nslab/topology/graph"
	"github.com/nslab/nslab/topology/lab"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed assets
var assets embed.FS

var page = template.Must(template.ParseFS(assets, "assets/index.html"))

// history is how many views a page gets when it connects, and the length
// of its charts: 10 minutes at the default interval of 1 s, 5 at 0.5 s.
const history = 600

// Server is the live view of one lab.
type Server struct {
	m        *lab.Manager
	name     string
	interval time.Duration
	metrics  *metrics.Collector
	registry *prometheus.Registry
	// fed: the views come from a feed (Feed), not from sampling a lab
	// here; there are no metrics then.
	fed bool

	mu      sync.Mutex
	lab     *watch.Lab // nil while the lab is not deployed
	svg     string
	recent  [][]byte // the last views, as sent
	clients map[chan []byte]bool
}

// New is the view of lab name (opened now: it must be deployed),
// sampled every interval.
func New(m *lab.Manager, name string, interval time.Duration) (*Server, error) {
	l, err := watch.Open(m, name)
	if err != nil {
		return nil, err
	}
	s := &Server{m: m, name: name, interval: interval, metrics: metrics.New(m, name), registry: prometheus.NewRegistry(), clients: map[chan []byte]bool{}}
	s.registry.MustRegister(s.metrics)
	s.setLab(l)
	return s, nil
}

// setLab makes l (nil: none) the lab watched.
func (s *Server) setLab(l *watch.Lab) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lab != nil {
		s.lab.Close()
	}
	s.lab, s.recent = l, nil
	if l != nil {
		s.svg = graph.SVG(graph.Build(l.Spec))
	}
}

// Close closes the lab's namespaces.
func (s *Server) Close() {
	s.setLab(nil)
	s.metrics.Close()
}

// Handler serves the page, its script, the events and the metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.Handle("GET /assets/", http.FileServerFS(assets))
	mux.HandleFunc("GET /events", s.events)
	if s.registry != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	}
	return mux
}

// index serves the page with the lab's drawing.
func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	data := struct {
		Lab, Interval string
		SVG           template.HTML
		Deployed      bool
	}{s.name, s.interval.String(), template.HTML(s.svg), s.lab != nil || s.fed} // #nosec G203 -- graph.SVG escapes every text
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := page.Execute(w, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// events streams the views to one page as server-sent events: the recent
// ones first, then each new one.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ch := make(chan []byte, history+8)
	s.mu.Lock()
	for _, m := range s.recent {
		ch <- m
	}
	s.clients[ch] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, ch)
		s.mu.Unlock()
	}()
	for {
		select {
		case <-r.Context().Done():
			return
		case m := <-ch:
			if _, err := fmt.Fprintf(w, "data: %s\n\n", m); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// Message is one server-sent event: a view, or news of the lab.
type Message struct {
	Type  string      `json:"type"` // view; error (a reading failed); gone (destroyed); reload (deployed again: the page reloads)
	View  *watch.View `json:"view,omitempty"`
	Error string      `json:"error,omitempty"`
}

// send hands m to every page; a page too slow to take it misses it.
func (s *Server) send(m Message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.Type == "view" {
		s.recent = append(s.recent, b)
		if len(s.recent) > history {
			s.recent = s.recent[1:]
		}
	}
	for ch := range s.clients {
		select {
		case ch <- b:
		default:
		}
	}
}

// step is one interval of Sample: a reading and its view when the lab is
// there, else a look for it; it returns the reading the next view starts
// from.
func (s *Server) step(prev *watch.Snapshot) *watch.Snapshot {
	s.mu.Lock()
	l := s.lab
	s.mu.Unlock()
	if l == nil {
		if nl, err := watch.Open(s.m, s.name); err == nil {
			s.setLab(nl)
			s.send(Message{Type: "reload"})
		}
		return nil
	}
	cur, err := l.Read()
	switch {
	case errors.Is(err, watch.ErrGone):
		s.setLab(nil)
		s.send(Message{Type: "gone"})
		return nil
	case err != nil:
		s.send(Message{Type: "error", Error: err.Error()})
		return prev // the next view spans the failed reading
	case prev != nil:
		s.send(Message{Type: "view", View: l.Delta(prev, cur)})
	}
	return cur
}

// Sample reads the lab every interval and sends each view, until ctx is
// done. When the lab goes it closes it, says so, and looks every
// interval for it to be deployed again.
func (s *Server) Sample(ctx context.Context) {
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	var prev *watch.Snapshot
	for {
		prev = s.step(prev)
		s.metrics.Prune()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
