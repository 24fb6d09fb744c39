package search

import (
	"context"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/report"
)

// TestSearchFindsCapacity runs the search against a modelled path that
// forwards at most capacity pps and drops the rest, with an engine whose
// top rate is twice that.
func TestSearchFindsCapacity(t *testing.T) {
	for _, c := range []struct {
		capacity, top float64
		loss          float64
	}{{500000, 1e6, 0}, {123456, 900000, 0}, {500000, 1e6, 0.05}, {2e6, 1e6, 0}} {
		model := func(pps uint64) (report.Trial, error) {
			offered := float64(pps)
			if pps == 0 || offered > c.top {
				offered = c.top
			}
			recv := min(offered, c.capacity)
			tr := report.Trial{OfferedPPS: pps, SentPPS: offered, Sent: uint64(offered), Received: uint64(recv)}
			tr.LossRatio = (offered - recv) / offered
			tr.Pass = tr.LossRatio <= c.loss
			return tr, nil
		}
		res := &report.SearchResult{}
		if err := binary(res, Options{Loss: c.loss}, model); err != nil {
			t.Fatal(err)
		}
		want := min(c.capacity/(1-c.loss), c.top)
		if !res.Confirmed || res.ThroughputPPS > want || res.ThroughputPPS < want*0.97 {
			t.Errorf("capacity %.0f, loss %.2f: found %.0f (want just below %.0f), confirmed %v, %d trials",
				c.capacity, c.loss, res.ThroughputPPS, want, res.Confirmed, len(res.Trials))
		}
		if c.capacity > c.top && !res.SenderLimited {
			t.Errorf("a path faster than the engine must be reported as sender-limited")
		}
	}
}

// TestSearchConfirmsSeveralTimes: a rate must pass every confirmation
// trial; a path that drops at random below its capacity makes the search
// step down until it does.
func TestSearchConfirmsSeveralTimes(t *testing.T) {
	calls := map[uint64]int{}
	flaky := func(pps uint64) (report.Trial, error) {
		offered := float64(pps)
		if pps == 0 {
			offered = 1e6
		}
		calls[pps]++
		// Up to 500 kpps holds, but between 490 and 500 kpps every
		// second trial loses.
		pass := offered <= 490000 || (offered <= 500000 && calls[pps]%2 == 1)
		tr := report.Trial{OfferedPPS: pps, SentPPS: offered, Pass: pass}
		return tr, nil
	}
	res := &report.SearchResult{}
	if err := binary(res, Options{Confirm: 3}, flaky); err != nil {
		t.Fatal(err)
	}
	if !res.Confirmed || res.ThroughputPPS > 490000 {
		t.Errorf("found %.0f, confirmed %v: want a rate that passes three times (at most 490000)", res.ThroughputPPS, res.Confirmed)
	}
}

// pathRunner is a search.Runner over a modelled path: threads senders,
// together at most top pps, through a path that forwards at most capacity
// pps; each trial lasts a second.
type pathRunner struct {
	threads       int
	top, capacity float64
	rates         []uint64 // the per-thread rates asked
}

func (p *pathRunner) Trial(_ context.Context, rate, _ uint64, _ time.Duration, _ Latency) (*report.Report, error) {
	p.rates = append(p.rates, rate)
	sent := p.top
	if rate > 0 {
		sent = min(float64(rate)*float64(p.threads), p.top)
	}
	recv := min(sent, p.capacity)
	return &report.Report{Sent: uint64(sent), Received: uint64(recv), Loss: int64(sent - recv), Elapsed: time.Second}, nil
}

func (p *pathRunner) Threads() int  { return p.threads }
func (p *pathRunner) Quiet() func() { return func() {} }

// TestBinaryDividesTheRate: the binary search asks each of the sending
// threads for its share of the rate it tries, so that what the threads
// send together is the rate it reports (two threads once offered twice
// the rate found).
func TestBinaryDividesTheRate(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		p := &pathRunner{threads: threads, top: 1e6, capacity: 300000}
		res := &report.SearchResult{}
		if err := Binary(context.Background(), p, Options{}, res); err != nil {
			t.Fatal(err)
		}
		if !res.Confirmed || res.ThroughputPPS > 300000 || res.ThroughputPPS < 0.97*300000 {
			t.Errorf("%d threads: found %.0f pps (want just below 300000), confirmed %v", threads, res.ThroughputPPS, res.Confirmed)
		}
		for i, tr := range res.Trials {
			if tr.OfferedPPS > 0 && (p.rates[i]*uint64(threads) > tr.OfferedPPS || p.rates[i]*uint64(threads)+uint64(threads) <= tr.OfferedPPS) {
				t.Errorf("%d threads: trial %d offered %d pps, asked each thread for %d", threads, i, tr.OfferedPPS, p.rates[i])
			}
		}
	}
}
