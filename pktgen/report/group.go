package report

import "time"

// GroupReport is the streams' run at one frame size: each stream's report,
// and the aggregate.
type GroupReport struct {
	Frame     int       `json:"frame"`
	Streams   []*Report `json:"streams"`
	Aggregate Aggregate `json:"aggregate"`
}

// Aggregate is the streams together: their sums, and the drops of every
// counter on their paths, each counter once.
type Aggregate struct {
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
	Loss       int64   `json:"loss"`
	LossPct    float64 `json:"loss_pct"`
	PPS        float64 `json:"pps"`
	MbpsL2     float64 `json:"mbps_l2"`
	Drops      []Drop  `json:"drops"`
	NamedDrops uint64  `json:"named_drops"`
	Added      []Drop  `json:"added,omitempty"`
	NamedAdded uint64  `json:"named_added,omitempty"`
	Unaccount  int64   `json:"unaccounted"` // Loss + NamedAdded - NamedDrops
	// Overlap is how long every stream's engine was running at once;
	// Span from the first start to the last end.
	Overlap time.Duration `json:"overlap_ns"`
	Span    time.Duration `json:"span_ns"`
	// Counting says how each stream was counted at its receiver.
	Counting []string `json:"counting"`
	// Bottleneck is what limited the runs together, in a line; Verdict
	// has its parts.
	Bottleneck string  `json:"bottleneck"`
	Verdict    Verdict `json:"verdict"`
}
