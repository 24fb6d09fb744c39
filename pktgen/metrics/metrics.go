// Package metrics serves the live counters of deployed labs as Prometheus
// metrics (OpenMetrics or the text format, as the scraper asks), through
// prometheus/client_golang: the reference library, whose registry checks
// every family and label set and whose handler negotiates the format.
//
// Each scrape reads the kernel afresh (package watch): every lab
// interface's counters labelled lab, node and interface; softnet and CPU
// time per CPU; each node's IP MIB and connection tracking; and, while a
// bench runs on a lab, its last interval's rates per hop.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/watch"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector collects the labs it watches: the named ones, or every
// deployed lab when none is named. It opens a lab when it appears and
// closes it as soon as it is destroyed.
type Collector struct {
	m     *lab.Manager
	names []string
	mu    sync.Mutex
	labs  map[string]*watch.Lab
	// Errors counts scrapes' failures to read a lab, by lab.
	errors *prometheus.CounterVec
}

// New is a collector of the named labs (none: all deployed labs).
func New(m *lab.Manager, names ...string) *Collector {
	return &Collector{m: m, names: names, labs: map[string]*watch.Lab{},
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nslab_scrape_errors_total", Help: "Reads of a lab that failed during scrapes."}, []string{"lab"})}
}

// Close closes every lab's namespaces.
func (c *Collector) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, l := range c.labs {
		l.Close()
		delete(c.labs, name)
	}
}

// Prune closes the labs that are no longer deployed. A server calls it
// every second or so between scrapes, so that it does not keep a
// destroyed lab's namespaces alive until the next scrape.
func (c *Collector) Prune() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, l := range c.labs {
		if !l.Present() {
			l.Close()
			delete(c.labs, name)
		}
	}
}

// PruneEvery prunes every interval until ctx is done.
func (c *Collector) PruneEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Prune()
		}
	}
}

// Describe sends nothing: the families depend on the labs deployed at
// each scrape (an unchecked collector, as client_golang allows).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads every watched lab and the machine once.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh()
	collectMachine(ch)
	names := make([]string, 0, len(c.labs))
	for name := range c.labs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s, err := c.labs[name].Read()
		if err != nil {
			if errors.Is(err, watch.ErrGone) {
				delete(c.labs, name)
				continue
			}
			c.errors.WithLabelValues(name).Inc()
			continue
		}
		collectLab(ch, c.labs[name], s)
	}
	c.errors.Collect(ch)
}

// refresh opens the labs deployed now that are not open yet.
func (c *Collector) refresh() {
	want := c.names
	if len(want) == 0 {
		list, err := c.m.Store().List()
		if err != nil {
			return
		}
		for _, s := range list {
			if s.Phase == state.PhaseDeployed {
				want = append(want, s.Lab)
			}
		}
	}
	for _, name := range want {
		if _, open := c.labs[name]; open {
			continue
		}
		if l, err := watch.Open(c.m, name); err == nil {
			c.labs[name] = l
		}
	}
}

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on Linux).
const userHZ = 100

var cpuModes = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

// collectMachine sends the per-CPU families.
func collectMachine(ch chan<- prometheus.Metric) {
	cpuDesc := prometheus.NewDesc("nslab_cpu_seconds_total", "Time each CPU spent in each mode (/proc/stat).", []string{"cpu", "mode"}, nil)
	for cpu, v := range kstat.CPUTimes() {
		for i, mode := range cpuModes {
			ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, float64(v[i])/userHZ, fmt.Sprint(cpu), mode)
		}
	}
	names := []struct{ name, help string }{
		{"nslab_softnet_processed_total", "Packets each CPU's backlog processed (softnet_stat)."},
		{"nslab_softnet_dropped_total", "Packets dropped because each CPU's backlog was full (softnet_stat; 32 bits in the kernel)."},
		{"nslab_softnet_time_squeeze_total", "Times each CPU's NAPI budget ran out with work left (softnet_stat)."},
		{"nslab_softnet_received_rps_total", "Packets steered to each CPU by RPS (softnet_stat)."},
	}
	for cpu, v := range kstat.Softnet() {
		for i, n := range names {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(n.name, n.help, []string{"cpu"}, nil), prometheus.CounterValue, float64(v[i]), fmt.Sprint(cpu))
		}
	}
}
