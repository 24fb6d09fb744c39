package search

import (
	"testing"

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
