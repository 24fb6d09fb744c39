package report

import (
	"fmt"
	"github.com/nslab/nslab/pktgen/measured"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// TCPRun is what a run of TCP flows measured (Report.TCP): each flow's
// goodput, retransmissions, round-trip times and congestion window over
// time, both ends' TCP_INFO, and the retransmitted segments set against
// the drops counted on the path.
type TCPRun struct {
	CC       string        `json:"cc"` // "": the kernel's default
	Duration time.Duration `json:"duration"`
	// Elapsed is from the start until the last byte of any flow arrived
	// (the flows deliver what they wrote after Duration).
	Elapsed time.Duration `json:"elapsed"`
	Drained bool          `json:"drained"`
	// BusyPoll is how long the sink's sockets busy-polled (napi:
	// busy_poll of the receiving interface), as the kernel gave it back.
	BusyPoll time.Duration `json:"receiver_busy_poll,omitempty"`
	Flows    []TCPFlow     `json:"flows"`
	Total    TCPFlow       `json:"total"`
	// Losses sets what the senders retransmitted against the drops the
	// path counted.
	Losses TCPLosses `json:"losses"`
	// Latency is the one-way latency of a probe stream, idle and under
	// the flows' load.
	Latency *TCPLatency `json:"latency,omitempty"`
}

// TCPLatency is latency under load, flent's RRUL way: a sequenced UDP
// probe of RatePPS small frames a second, read at the receiver, first
// alone (Idle) and then beside the flows (Loaded), and the ratio of their
// medians and 99th percentiles.
type TCPLatency struct {
	RatePPS        int               `json:"rate_pps"`
	Idle           *measured.Latency `json:"idle"`
	Loaded         *measured.Latency `json:"loaded"`
	RatioP50       float64           `json:"ratio_p50,omitempty"`
	RatioP99       float64           `json:"ratio_p99,omitempty"`
	IdleLost       uint64            `json:"idle_lost"`
	LoadedLost     uint64            `json:"loaded_lost"`
	LoadedReceived uint64            `json:"loaded_received"`
}

// Line says the latency idle and under load in a line.
func (l *TCPLatency) Line() string {
	d := func(ns int64) string { return time.Duration(ns).Round(time.Microsecond).String() }
	s := fmt.Sprintf("one-way, a probe of %d frames a second: idle p50 %s p99 %s (%d samples); under load p50 %s p99 %s (%d samples, %d probes lost)",
		l.RatePPS, d(l.Idle.P50Ns), d(l.Idle.P99Ns), l.Idle.Samples, d(l.Loaded.P50Ns), d(l.Loaded.P99Ns), l.Loaded.Samples, l.LoadedLost)
	if l.RatioP50 > 0 {
		s += fmt.Sprintf(": %.1fx idle at p50, %.1fx at p99", l.RatioP50, l.RatioP99)
	}
	if _, where, ok := strings.Cut(l.Idle.Method, "; "); ok { // read on another host: its clock against the sender's
		s += "; " + where
	}
	return s
}

// TCPFlow is one flow (or, as Total, all of them).
type TCPFlow struct {
	Port        int              `json:"port,omitempty"`
	Received    uint64           `json:"received_bytes"`
	GoodputMbps float64          `json:"goodput_mbps"` // bytes the sink read ÷ the time to its last byte
	Retrans     uint32           `json:"retransmitted"`
	SRTT        time.Duration    `json:"srtt"`    // smoothed, at the end (Total: the flows' mean)
	MinRTT      time.Duration    `json:"min_rtt"` // Total: the least
	Points      []measured.Point `json:"points,omitempty"`
	Sender      *measured.Info   `json:"sender,omitempty"`
	Receiver    *measured.Info   `json:"receiver,omitempty"`
}

// TCPLosses accounts for the retransmitted segments. TCP_INFO of both ends
// gives, exactly, the data segments lost on the way: those the senders
// sent (retransmissions included) less those the receivers took in
// (duplicates included). Retransmitted = Lost + Spurious (retransmissions
// of segments that had arrived). The path's drop counters say where the
// lost ones died; they count packets, and a GSO packet holds several
// segments, so the segments are given to the places that dropped data:
// all of them to one place, or split by packets between several (said
// in SplitBy). Unexplained are lost segments no counter saw.
type TCPLosses struct {
	Retransmitted uint64 `json:"retransmitted"`
	SentSegments  uint64 `json:"data_segments_sent"`
	RecvSegments  uint64 `json:"data_segments_received"`
	Lost          int64  `json:"lost"`
	Spurious      int64  `json:"spurious"`
	Drops         []Drop `json:"drops"`
	SplitBy       string `json:"split_by,omitempty"`
	Unexplained   int64  `json:"unexplained"`
	// AckDrops are what the reverse direction dropped (acknowledgements,
	// which cost no retransmission).
	AckDrops []Drop `json:"ack_drops,omitempty"`
	// Kernel holds how much the sender's TCP counters that name
	// retransmissions without a loss, or lost again, grew in the run.
	Kernel map[string]uint64 `json:"kernel_counters,omitempty"`
}

// Line is the identity in a line: "retransmitted 144 = lost 144 (data
// segments sent 4805, received 4661) + spurious 0; lost at ns2:veth2's
// tbf 144 (43 packets); unexplained 0".
func (l TCPLosses) Line() string {
	s := fmt.Sprintf("retransmitted %d = lost %d (data segments sent %d, received %d) + spurious %d", l.Retransmitted, l.Lost, l.SentSegments, l.RecvSegments, l.Spurious)
	var at []string
	for _, d := range l.Drops {
		at = append(at, fmt.Sprintf("%d at %s (%d packets)", d.Segments, d.Place, d.Packets))
	}
	if len(at) > 0 {
		s += "; lost " + strings.Join(at, ", ")
		if l.SplitBy != "" {
			s += " (" + l.SplitBy + ")"
		}
	}
	s += fmt.Sprintf("; unexplained %d", l.Unexplained)
	var why []string
	for _, k := range TCPReasonCounters {
		if v := l.Kernel[k]; v > 0 {
			why = append(why, fmt.Sprintf("%s %d", k, v))
		}
	}
	if len(why) > 0 {
		s += " (the sender's kernel counted " + strings.Join(why, ", ") + ")"
	}
	return s
}

// TCPReasonCounters are the sender's TcpExt counters that say why a
// segment was retransmitted without being lost, or lost again.
var TCPReasonCounters = []string{"TCPSpuriousRTOs", "TCPSpuriousRtxHostQueues", "TCPLostRetransmit", "TCPDSACKRecv", "TCPDSACKOfoRecv"}

// tcpTable writes a TCP run for a terminal.
func (r *Report) tcpTable(w io.Writer) error {
	ew := &errWriter{w: w}
	t := r.TCP
	cc := t.CC
	if cc == "" {
		cc = "the kernel's default"
	}
	ew.printf("lab %s%s, traffic %s: %s -> %s, next hop %s (%s)\n", r.Lab, variantSuffix(r.Variant), r.Traffic, r.From, r.To, r.NextHop, r.NextHopMAC)
	ew.printf("engine: %s; %d TCP flow(s), congestion control %s, writing for %s; the last byte arrived at %s", r.Engine, len(t.Flows), cc,
		t.Duration.Round(time.Millisecond), t.Elapsed.Round(time.Millisecond))
	if !t.Drained {
		ew.printf(" (NOT drained: reset after waiting)")
	}
	if t.BusyPoll > 0 {
		ew.printf("; the sink's sockets busy-poll %s (SO_BUSY_POLL, read back)", t.BusyPoll)
	}
	ew.printf("\n\nbottleneck: %s\n\n", r.Bottleneck)
	tw := tabwriter.NewWriter(ew, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tGOODPUT Mb/s\tRECEIVED\tRETRANS\tSRTT\tMIN RTT\tCWND\tSEGS OUT\tSEGS IN (RECEIVER)\t")
	for i, f := range t.Flows {
		fmt.Fprintf(tw, "%d (port %d)\t%.2f\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t\n", i+1, f.Port, f.GoodputMbps, f.Received, f.Retrans,
			f.SRTT, f.MinRTT, f.Sender.Cwnd, f.Sender.DataSegsOut, f.Receiver.DataSegsIn)
	}
	fmt.Fprintf(tw, "total\t%.2f\t%d\t%d\t%s\t%s\t\t\t\t\n", t.Total.GoodputMbps, t.Total.Received, t.Total.Retrans, t.Total.SRTT, t.Total.MinRTT)
	_ = tw.Flush()
	if t.Latency != nil {
		ew.printf("\nlatency: %s\n", t.Latency.Line())
	}
	ew.printf("\nlosses: %s\n", t.Losses.Line())
	for _, d := range t.Losses.Drops {
		ew.printf("  %s: %d segments in %d packets (%s); %s\n", d.Place, d.Segments, d.Packets, d.Counted, d.Cause)
	}
	for _, d := range t.Losses.AckDrops {
		ew.printf("  acknowledgements dropped at %s: %d (%s)\n", d.Place, d.Packets, d.Cause)
	}
	ew.printf("\ncongestion window (segments) and smoothed RTT over time, flow by flow:\n")
	for i, f := range t.Flows {
		var pts []string
		for _, p := range f.Points {
			pts = append(pts, fmt.Sprintf("%.1fs %d/%s", p.At.Seconds(), p.Cwnd, p.SRTT.Round(10*time.Microsecond)))
		}
		ew.printf("  %d: %s\n", i+1, strings.Join(pts, "  "))
	}
	ew.printf("\n")
	r.tableHops(ew)
	r.fidelityLines(ew)
	r.tableCPUs(ew)
	r.tableEnv(ew)
	return ew.err
}

// tcpCSV and tcpMarkdown are a TCP run's row.
const tcpCSVHead = "flows,cc,goodput_mbps,received_bytes,retransmitted,lost,spurious,unexplained,srtt_ms,min_rtt_ms,bottleneck\n"

func (r *Report) tcpCSV(ew *errWriter) {
	t := r.TCP
	ew.printf("%d,%s,%.3f,%d,%d,%d,%d,%d,%.3f,%.3f,%q\n", len(t.Flows), t.CC, t.Total.GoodputMbps, t.Total.Received, t.Losses.Retransmitted,
		t.Losses.Lost, t.Losses.Spurious, t.Losses.Unexplained, ms(t.Total.SRTT), ms(t.Total.MinRTT), r.Bottleneck)
}

func (r *Report) tcpMarkdown(ew *errWriter) {
	t := r.TCP
	ew.printf("| %d | %s | %.2f | %d | %d | %d | %d | %.3f | %.3f | %s |\n", len(t.Flows), t.CC, t.Total.GoodputMbps, t.Losses.Retransmitted,
		t.Losses.Lost, t.Losses.Spurious, t.Losses.Unexplained, ms(t.Total.SRTT), ms(t.Total.MinRTT), strings.ReplaceAll(r.Bottleneck, "|", "/"))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
