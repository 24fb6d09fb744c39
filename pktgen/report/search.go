package report

import (
	"fmt"
	"io"
)

// Trial is one fixed-rate trial of a search.
type Trial struct {
	OfferedPPS uint64  `json:"offered_pps"` // 0: as fast as the engine goes
	SentPPS    float64 `json:"sent_pps"`
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
	LossRatio  float64 `json:"loss_ratio"`
	Pass       bool    `json:"pass"`
	Bottleneck string  `json:"bottleneck"`
	Bursts     bool    `json:"bursts,omitempty"` // it lost packets in bursts, not from load (see Verdict)
}

// SearchResult is the throughput found for one frame size, as RFC 2544
// section 26.1 defines it: the highest offered rate whose loss is at most
// the accepted ratio, confirmed by a final trial.
type SearchResult struct {
	Lab           string  `json:"lab"`
	Traffic       string  `json:"traffic"`
	Variant       string  `json:"variant,omitempty"` // see Report.Variant
	Block         string  `json:"block,omitempty"`   // see Report.Block
	Frame         int     `json:"frame"`
	ThroughputPPS float64 `json:"throughput_pps"`
	MbpsL2        float64 `json:"mbps_l2"`
	MbpsL1        float64 `json:"mbps_l1"`
	LossAccepted  float64 `json:"loss_accepted"`
	Trials        []Trial `json:"trials"`
	Confirmed     bool    `json:"confirmed"`
	SenderLimited bool    `json:"sender_limited"` // even the engine's top rate passed
	Engine        string  `json:"engine"`
	// Bottleneck is the verdict of the trial at the engine's top rate:
	// what limits the path when it is pushed.
	Bottleneck  string  `json:"bottleneck"`
	LinkSpeed   uint32  `json:"link_speed_mbps,omitempty"` // the sender link's speed, as its driver reports it
	LineRatePPS float64 `json:"line_rate_pps,omitempty"`   // frames of this size that speed carries
}

// burstTrials counts the failed trials that lost packets in bursts.
func (r *SearchResult) burstTrials() int {
	n := 0
	for _, t := range r.Trials {
		if !t.Pass && t.Bursts {
			n++
		}
	}
	return n
}

// writeSearch renders search results (table or markdown), with every
// trial and the verdict at the engine's top rate.
func writeSearch(w io.Writer, format string, rs []*SearchResult) error {
	t := newTabular(w, format)
	t.header("frame", "throughput pps", "Mb/s L2", "Mb/s L1", "trials", "confirmed", "line rate pps")
	for _, r := range rs {
		note := fmt.Sprint(r.Confirmed)
		if r.SenderLimited {
			note = "sender-limited"
		}
		line := "unknown"
		if r.LineRatePPS > 0 {
			line = fmt.Sprintf("%.0f (%d Mb/s link)", r.LineRatePPS, r.LinkSpeed)
		}
		t.row(fmt.Sprint(r.Frame), f0(r.ThroughputPPS), f1(r.MbpsL2), f1(r.MbpsL1), fmt.Sprint(len(r.Trials)), note, line)
	}
	for _, r := range rs {
		note := fmt.Sprintf("frame %d (%s, loss accepted %.3f%%): at the top rate, bottleneck: %s", r.Frame, r.Engine, 100*r.LossAccepted, r.Bottleneck)
		if n := r.burstTrials(); n > 0 {
			note += fmt.Sprintf("; %d failed trial(s) lost packets in bursts with the dropping CPU under 60%% busy: below its capacity the path drops"+
				" when that CPU stalls, so the rate found is set by those stalls as much as by forwarding (rerun it before you publish it)", n)
		}
		t.section(note)
		t.header("offered pps", "sent pps", "sent", "received", "loss %", "pass", "bottleneck")
		for _, tr := range r.Trials {
			offered := fmt.Sprint(tr.OfferedPPS)
			if tr.OfferedPPS == 0 {
				offered = "max"
			}
			t.row(offered, f0(tr.SentPPS), fmt.Sprint(tr.Sent), fmt.Sprint(tr.Received), fmt.Sprintf("%.3f", 100*tr.LossRatio), fmt.Sprint(tr.Pass), tr.Bottleneck)
		}
	}
	return t.done()
}
