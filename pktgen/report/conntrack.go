package report

import "fmt"

// ConntrackSource names where the conntrack figures come from.
const ConntrackSource = "/proc/net/stat/nf_conntrack of its namespace, summed over CPUs"

// ConntrackCounts is a router's connection tracking over a run.
type ConntrackCounts struct {
	Node   string `json:"node"`
	Source string `json:"source"`
	// EntriesBefore and Entries are the table's size before and after
	// the run; the others are events in the run.
	EntriesBefore uint64 `json:"entries_before"`
	Entries       uint64 `json:"entries"`
	New           uint64 `json:"new"`
	Found         uint64 `json:"found"`
	Invalid       uint64 `json:"invalid"`
	InsertFailed  uint64 `json:"insert_failed"`
	Drop          uint64 `json:"drop"`
	EarlyDrop     uint64 `json:"early_drop"`
}

// Dropped is what conntrack itself dropped in the run.
func (c ConntrackCounts) Dropped() uint64 { return c.InsertFailed + c.Drop + c.EarlyDrop }

// moved reports whether connection tracking saw the run at all.
func (c ConntrackCounts) Moved() bool {
	return c.Entries+c.EntriesBefore+c.New+c.Found+c.Invalid+c.Dropped() > 0
}

// String is the report's line, with where its figures come from.
func (c ConntrackCounts) String() string { return c.line(true) }

// line is the report's line; source: with where its figures come from.
func (c ConntrackCounts) line(source bool) string {
	from := ""
	if source {
		from = " (" + c.Source + ")"
	}
	return fmt.Sprintf("conntrack in %s%s: %d entries (%d before); in the run: new %d, found %d, invalid %d, insert_failed %d, drop %d, early_drop %d",
		c.Node, from, c.Entries, c.EntriesBefore, c.New, c.Found, c.Invalid, c.InsertFailed, c.Drop, c.EarlyDrop)
}
