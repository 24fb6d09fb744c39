// Package search holds the searches of a rate: a binary search of the
// throughput, MLRsearch's goals and RFC 2544's four benchmarks, each a
// procedure of trials that a Runner (the bench) measures.
package search

import (
	"context"
	"time"

	"github.com/nslab/nslab/pktgen/report"
)

// The searches of a rate: a binary search of the throughput, MLRsearch's
// goals, and RFC 2544's four benchmarks. Each is a procedure of trials,
// and a trial is one measured run of the bench's traffic, with its
// accounting and verdict; what runs the trial is the bench's runner
// (Runner), so that a search is written, and tested, apart from it.

// Latency says whether a trial reads every packet's latency.
type Latency int

const (
	AsAsked Latency = iota // as the bench was asked
	Read                   // read it (RFC 2544's latency at the throughput)
	Skip                   // do not (frame loss and bursts: counters only)
)

// Runner runs the trials of one traffic run at one frame size.
type Runner interface {
	// Trial measures one run with the traffic's rate (packets per second
	// for each sending thread; 0: as fast as the sender goes), count
	// (packets per thread; 0: none) and duration replaced.
	Trial(ctx context.Context, rate, count uint64, d time.Duration, l Latency) (*report.Report, error)
	// Threads is how many threads send the traffic.
	Threads() int
	// Quiet stops the runner's live output (a search's trials are not
	// the run a watcher follows) until the returned function is called.
	Quiet() (restore func())
}
