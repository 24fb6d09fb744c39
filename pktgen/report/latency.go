package report

import (
	"fmt"
	"slices"
	"strings"
)

// latencyLines is the table's latency and sequence block.
func (r *Report) latencyLines(ew *errWriter) {
	if l := r.Latency; l != nil {
		ew.printf("latency, one-way (%d samples): ", l.Samples)
		if l.Samples == 0 {
			ew.printf("none received\n")
		} else {
			ew.printf("min %s  p50 %s  p90 %s  p99 %s\n  p99.9 %s  max %s  mean %s;  jitter (RFC 3550) %s\n",
				nsString(float64(l.MinNs)), nsString(float64(l.P50Ns)), nsString(float64(l.P90Ns)), nsString(float64(l.P99Ns)),
				nsString(float64(l.P999Ns)), nsString(float64(l.MaxNs)), nsString(l.MeanNs), nsString(l.JitterNs))
		}
		ew.printf("  %s", l.Method)
		ew.detailf("; send stamps to %s", nsString(float64(l.ResolutionNs)))
		ew.printf("\n")
	}
	if s := r.Sequence; s != nil {
		ew.printf("by sequence: %d unique received + %d lost = %d the engine sent; %d duplicates", s.UniqueReceived, s.Lost, s.UniqueReceived+s.Lost, s.Duplicates)
		if r.NamedAdded > 0 {
			ew.printf(" (the path's named copies: %d)", r.NamedAdded)
		}
		ew.printf(", %d reordered; longest gap %d packets (%s)\n", s.Reordered, s.LongestGapPackets, nsString(float64(s.LongestGapNs)))
		if len(s.LossRuns) > 0 {
			ew.printf("runs of losses (length x runs): %s; mean run %.2f packets\n", lossRunsLine(s.LossRuns), s.MeanLossRun)
		}
	} else if r.SequenceNote != "" {
		ew.printf("%s\n", r.SequenceNote)
	}
	if r.ReaderMissed > 0 {
		ew.printf("the reader missed %d packets (its ring was full): they count as lost by sequence, and were not\n", r.ReaderMissed)
	}
	if r.Latency != nil || r.Sequence != nil {
		ew.printf("\n")
	}
}

// nsString writes nanoseconds in the unit that suits them.
func nsString(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// latencyCSVHead names the CSV columns of the latency and the sequence
// accounting, after the others; empty cells when not measured.
const latencyCSVHead = "latency_samples,latency_min_ns,latency_p50_ns,latency_p90_ns,latency_p99_ns,latency_p999_ns,latency_max_ns,latency_mean_ns,jitter_ns," +
	"unique_received,lost_by_sequence,duplicates,reordered,longest_gap_packets,longest_gap_ns"

// latencyCSV is the report's cells of latencyCSVHead.
func (r *Report) latencyCSV() string {
	cells := make([]string, 0, 15)
	if l := r.Latency; l != nil {
		cells = append(cells, fmt.Sprint(l.Samples), fmt.Sprint(l.MinNs), fmt.Sprint(l.P50Ns), fmt.Sprint(l.P90Ns), fmt.Sprint(l.P99Ns),
			fmt.Sprint(l.P999Ns), fmt.Sprint(l.MaxNs), fmt.Sprintf("%.0f", l.MeanNs), fmt.Sprintf("%.0f", l.JitterNs))
	} else {
		cells = append(cells, make([]string, 9)...)
	}
	if s := r.Sequence; s != nil {
		cells = append(cells, fmt.Sprint(s.UniqueReceived), fmt.Sprint(s.Lost), fmt.Sprint(s.Duplicates), fmt.Sprint(s.Reordered),
			fmt.Sprint(s.LongestGapPackets), fmt.Sprint(s.LongestGapNs))
	} else {
		cells = append(cells, make([]string, 6)...)
	}
	return strings.Join(cells, ",")
}

// LatencyCell is the markdown cell of the latency ("-" when not measured).
func (r *Report) LatencyCell() string {
	l := r.Latency
	if r.TCP != nil && r.TCP.Latency != nil { // a TCP run's: its probe's under load
		l = r.TCP.Latency.Loaded
	}
	if l == nil || l.Samples == 0 {
		return "-"
	}
	return nsString(float64(l.P50Ns)) + " / " + nsString(float64(l.P99Ns)) + " / " + nsString(float64(l.MaxNs))
}

// sequenceCell is the markdown cell of the sequence accounting.
func (r *Report) sequenceCell() string {
	s := r.Sequence
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%d / %d / %d", s.Lost, s.Duplicates, s.Reordered)
}

// lossRunsLine is a loss-run histogram, shortest first: "1x812 2x95 3x12".
func lossRunsLine(h map[uint64]uint64) string {
	lengths := make([]uint64, 0, len(h))
	for l := range h {
		lengths = append(lengths, l)
	}
	slices.Sort(lengths)
	var parts []string
	for i, l := range lengths {
		if i == 12 {
			parts = append(parts, fmt.Sprintf("... (%d lengths more, up to %d)", len(lengths)-12, lengths[len(lengths)-1]))
			break
		}
		parts = append(parts, fmt.Sprintf("%dx%d", l, h[l]))
	}
	return strings.Join(parts, " ")
}
