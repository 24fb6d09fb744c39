package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Types of the lines of a bench's live stream.
const (
	LiveStart    = "start"    // a bench began (its lab, traffic runs, pid)
	LiveInterval = "interval" // one sampling interval of one run
	LiveEnd      = "end"      // the bench ended: its verdicts and report, or its error
)

// LiveEvent is one line of a bench's live stream: what nslab bench --live
// writes, and what the bench publishes for nslab top, web and metrics in
// the lab's state directory (see lab.Manager.LiveFile). An interval line
// gives, for the sampling interval that ended At seconds after the run's
// sampling began, every measured hop's rates and drops and every CPU's
// use and softnet counts, computed as the report's are.
type LiveEvent struct {
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`
	Lab     string    `json:"lab"`
	PID     int       `json:"pid,omitempty"`
	Traffic string    `json:"traffic,omitempty"`
	// Interval lines: the run's frame size and the rate it asks for per
	// thread (0: as fast as it goes), and the interval's figures.
	Frame      int          `json:"frame,omitempty"`
	OfferedPPS uint64       `json:"offered_pps,omitempty"`
	At         float64      `json:"at,omitempty"`       // s since the run's sampling began
	Interval   float64      `json:"interval,omitempty"` // s this line covers
	Hops       []LiveHop    `json:"hops,omitempty"`
	CPU        []CPUUse     `json:"cpu,omitempty"`
	Softnet    []SoftnetCPU `json:"softnet,omitempty"`
	// End lines: each finished run's verdict in a line, the report as
	// the table format renders it (folded to 120 characters, as the
	// terminal shows it), and the error that ended the bench; and what
	// was measured: the lab's file, its SHA-256 and nslab's version.
	Verdicts  []string `json:"verdicts,omitempty"`
	Report    string   `json:"report,omitempty"`
	Error     string   `json:"error,omitempty"`
	LabFile   string   `json:"lab_file,omitempty"`
	LabSHA256 string   `json:"lab_sha256,omitempty"`
	NSLab     string   `json:"nslab,omitempty"`
}

// LiveHop is one measured interface over one interval: its role on the
// path (sender, ingress, egress, receiver, ...), packet and bit rates
// (counter bytes: L2 without FCS), and the packets it dropped (rx and tx
// dropped, rx missed and its qdisc's drops).
type LiveHop struct {
	Node      string  `json:"node"`
	Interface string  `json:"interface"`
	Role      string  `json:"role"`
	RxPPS     float64 `json:"rx_pps"`
	TxPPS     float64 `json:"tx_pps"`
	RxMbps    float64 `json:"rx_mbps"`
	TxMbps    float64 `json:"tx_mbps"`
	Drops     uint64  `json:"drops"`
}

// WriteLive writes e as one JSON line.
func WriteLive(w io.Writer, e LiveEvent) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("live stream: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("live stream: %w", err)
	}
	return nil
}

// ReadLive reads a live stream's lines; a line that does not parse (one
// half written when it was read) ends it.
func ReadLive(r io.Reader) []LiveEvent {
	var out []LiveEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e LiveEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			break
		}
		out = append(out, e)
	}
	return out
}
