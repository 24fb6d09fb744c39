package account

import (
	"fmt"

	"github.com/nslab/nslab/pktgen/report"
)

// Connection tracking of a router: what its NAT and firewall cost and
// drop. Read from /proc/net/stat/nf_conntrack of the router's namespace
// (one row per CPU, hex; entries is the namespace's table size, the same
// on every row; the rest are per-CPU event counts, summed).

// ConntrackCause says what a router's conntrack dropped in the run, or "".
func ConntrackCause(r *report.Report, node string) string {
	for _, ct := range r.Conntrack {
		if ct.Node == node && ct.Dropped() > 0 {
			return fmt.Sprintf("; conntrack dropped %d (insert_failed %d, drop %d, early_drop %d)", ct.Dropped(), ct.InsertFailed, ct.Drop, ct.EarlyDrop)
		}
	}
	return ""
}

// ConntrackCounts is a router's conntrack over a run, from two readings.
func ConntrackCounts(node string, before, after map[string]uint64) report.ConntrackCounts {
	d := func(k string) uint64 { return after[k] - before[k] }
	return report.ConntrackCounts{Node: node, Source: report.ConntrackSource, EntriesBefore: before["entries"], Entries: after["entries"],
		New: d("new"), Found: d("found"), Invalid: d("invalid"), InsertFailed: d("insert_failed"), Drop: d("drop"), EarlyDrop: d("early_drop")}
}
