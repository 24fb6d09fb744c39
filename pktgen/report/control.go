package report

import "time"

// Control is a positive control of a comparison's set-up: variant A
// against A with a known cost added (Rules firewall rules that match
// nothing, on every forwarding node), measured in the same set-up and on
// the same figure as the comparison it vouches for. A set-up whose figure
// did not move for a known cost cannot say "no change" of anything.
type Control struct {
	Rules  int      `json:"rules"`
	Nodes  []string `json:"nodes"`
	Base   string   `json:"base"` // the variant the cost was added to
	Figure string   `json:"figure"`
	Setup  string   `json:"setup"`
	// Outcome is the control comparison's (different, same, inconclusive
	// or cannot tell); Estimate and the interval its change, in %.
	Outcome  string  `json:"outcome"`
	Estimate float64 `json:"estimate"`
	CILow    float64 `json:"ci_low"`
	CIHigh   float64 `json:"ci_high"`
	// ExpectedLow and ExpectedHigh are the change the known cost should
	// make to the figure, in %: the rules' documented cost (RuleNs a rule),
	// from half to twice it for the machine's drift, over A's measured cost
	// per packet. Both 0 when A's cost per packet was not measured.
	RuleNs       float64 `json:"rule_ns"`
	ExpectedLow  float64 `json:"expected_low,omitempty"`
	ExpectedHigh float64 `json:"expected_high,omitempty"`
	// Seen: the control decided "different" in the direction of a cost
	// (slower). SizeAsExpected: its interval meets the expected range.
	Seen           bool   `json:"seen"`
	SizeAsExpected bool   `json:"size_as_expected"`
	Sentence       string `json:"sentence"`
	// Where and when it was measured: a saved control vouches only for
	// the same lab file, traffic, set-up and machine, for a day.
	When      time.Time `json:"when"`
	Machine   string    `json:"machine"`
	LabSHA256 string    `json:"lab_sha256"`
	Key       string    `json:"key"`
	Saved     string    `json:"saved,omitempty"` // the file it was saved to or read from
}
