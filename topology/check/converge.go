package check

import (
	"context"
	"fmt"
	"time"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
)

// Convergence is how a lab's routing settled (see Converge).
type Convergence struct {
	// Took is from the start of the wait to the first look at the
	// routing tables in the state they then kept; Since is the same
	// moment measured from the end of the deploy (zero when unknown), or
	// SinceChange from the last change of a node made after it (nslab
	// node stop or start; Change says which).
	Took        time.Duration `json:"took_ns"`
	Since       time.Duration `json:"since_deploy_ns,omitempty"`
	SinceChange time.Duration `json:"since_change_ns,omitempty"`
	Change      string        `json:"change,omitempty"`
	// Settle is how long the tables had to stay the same, Poll how often
	// they were read: Took is exact to Poll.
	Settle time.Duration `json:"settle_ns"`
	Poll   time.Duration `json:"poll_ns"`
	// Changes is how many times the tables were seen to change.
	Changes int `json:"changes"`
}

// Mark is a moment convergence is measured from: the end of the deploy
// (Change empty), or a change to a node after it ("node r2 stopped").
type Mark struct {
	At     time.Time
	Change string
}

// MarkOf is the moment st's lab last changed: its deploy's end, or a
// node's stop or start after it.
func MarkOf(st *state.State) Mark {
	if c := st.LastChange; c != nil && c.At.After(st.Deployed) {
		return Mark{At: c.At, Change: c.What}
	}
	return Mark{At: st.Deployed}
}

// String says it in a line.
func (c Convergence) String() string {
	s := fmt.Sprintf("converged in %.2f s (the routing tables took their final state %.2f s into the wait, then stayed so for %v; %d change(s) seen, read every %v)",
		c.Took.Seconds(), c.Took.Seconds(), c.Settle, c.Changes, c.Poll)
	// No change seen: the tables had their state before the wait began,
	// so the time since the last change is a bound, not a measurement.
	bound := map[bool]string{true: "at most ", false: ""}[c.Changes == 0]
	switch {
	case c.Change != "":
		s += fmt.Sprintf("; %s%.2f s after %s", bound, c.SinceChange.Seconds(), c.Change)
	case c.Since > 0:
		s += fmt.Sprintf("; %s%.2f s after the deploy ended", bound, c.Since.Seconds())
	}
	return s
}

// Converge waits, up to wait, until the running lab's routing tables have
// stopped changing for settle and every pair behaves as the routes say
// (with the daemons' routes learned: see lab.Running.Learn), then returns
// the last check's pairs and how long convergence took. since is the
// moment convergence is measured from besides the wait's start: the end of
// the deploy, or a node's stop or start after it (zero: unknown). When
// wait runs out, it returns the last pairs and an error saying what was
// still wrong.
func Converge(ctx context.Context, r *deployed.Opened, o Options, wait, settle time.Duration, since Mark) (Pairs, Convergence, error) {
	const poll = 100 * time.Millisecond
	start := time.Now()
	c := Convergence{Settle: settle, Poll: poll}
	last, err := r.Tables()
	if err != nil {
		return nil, c, err
	}
	changed := start
	var pairs Pairs
	for {
		now := time.Now()
		tables, err := r.Tables()
		if err != nil {
			return nil, c, err
		}
		if tables != last {
			last, changed = tables, now
			c.Changes++
		}
		if now.Sub(changed) >= settle {
			if pairs, err = Run(ctx, r, o); err != nil {
				return nil, c, err
			}
			if now2, _ := r.Tables(); now2 == last {
				if summary, bad := pairs.Summary(); !bad {
					c.Took = changed.Sub(start)
					switch {
					case since.Change != "":
						c.SinceChange, c.Change = changed.Sub(since.At), since.Change
					case !since.At.IsZero():
						c.Since = changed.Sub(since.At)
					}
					return pairs, c, nil
				} else if time.Since(start) > wait {
					return pairs, c, fmt.Errorf("not converged within %v: %s", wait, summary)
				}
			}
		}
		if o.Status != nil {
			o.Status(waitStatus(c, pairs, time.Since(changed), settle))
		}
		if time.Since(start) > wait {
			return pairs, c, fmt.Errorf("not converged within %v: the routing tables were still changing (%d changes seen, the last %.2f s ago)", wait, c.Changes, time.Since(changed).Seconds())
		}
		select {
		case <-ctx.Done():
			return pairs, c, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// waitStatus says how a wait for convergence stands: the tables' changes
// so far, how long they have not changed against how long they must not,
// and the last check's summary when there was one.
func waitStatus(c Convergence, last Pairs, still, settle time.Duration) string {
	line := fmt.Sprintf("%d routing table change(s) seen, unchanged for %.1f s of the %v asked", c.Changes, still.Seconds(), settle)
	if last != nil {
		summary, _ := last.Summary()
		line += "; last check: " + summary
	}
	return line
}
