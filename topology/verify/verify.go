// Package verify checks a deployed lab against its file's tests: (see
// spec.Test): each test read from the kernels (routes, addresses,
// neighbours, echoes) or from the routing daemons themselves (FRR's
// vtysh JSON, birdc), tried again until it passes or its wait is over.
// It runs in the caller's namespace and enters the nodes' through the
// lab's open handles; a daemon's command runs in its node's view.
package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/spec"
)

// Checker checks tests on one deployed lab.
type Checker struct {
	Run *deployed.Opened
	// Command runs argv in node's namespace and view (where its
	// daemons' sockets are) and returns what it printed.
	Command func(node string, argv ...string) ([]byte, error)
	// Traffic benches a traffic test's run (nil: traffic tests fail
	// saying so).
	Traffic func(ctx context.Context, t *spec.Test) (Traffic, error)
}

// Traffic is what a bench of a traffic test's run measured.
type Traffic struct {
	Sent, Received int64
	LossPercent    float64
	RatePPS        float64       // at the receiver
	P99            time.Duration // 0: not measured
	Summary        string        // the bench's own identity line
}

// Outcome is one test's result.
type Outcome struct {
	Test     *spec.Test    `json:"-"`
	Name     string        `json:"name"`
	Kind     string        `json:"kind"`
	Where    string        `json:"where"`
	Pass     bool          `json:"pass"`
	Expected string        `json:"expected"`
	Measured string        `json:"measured"`
	Tries    int           `json:"tries"`
	Took     time.Duration `json:"took_ns"`
	Points   int           `json:"points"`
	Scored   int           `json:"scored"`
}

// result is one try: whether it passed, and what was measured.
type result struct {
	pass     bool
	measured string
}

// Check runs test t until it passes or its wait is over (once with no
// wait).
func (c *Checker) Check(ctx context.Context, t *spec.Test) Outcome {
	o := Outcome{Test: t, Name: t.Name, Kind: t.Kind, Where: where(t), Expected: expected(t), Points: t.Points}
	start := time.Now()
	for {
		o.Tries++
		r, err := c.once(ctx, t)
		if err != nil {
			r = result{measured: err.Error()}
		}
		o.Pass, o.Measured = r.pass, r.measured
		if o.Pass || time.Since(start)+t.Every > t.Wait || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(t.Every):
		}
	}
	o.Took = time.Since(start)
	if o.Pass {
		o.Scored = o.Points
	}
	return o
}

// once tries test t once.
func (c *Checker) once(ctx context.Context, t *spec.Test) (result, error) {
	switch t.Kind {
	case "reachable", "unreachable":
		return c.reach(t)
	case "route":
		return c.route(t)
	case "address":
		return c.address(t)
	case "neighbour":
		return c.neighbour(t)
	case "bgp":
		return c.bgp(t)
	case "bgp-route":
		return c.bgpRoute(t)
	case "ospf", "ospf6":
		return c.ospf(t)
	case "bird":
		return c.bird(t)
	case "traffic":
		return c.traffic(ctx, t)
	}
	return result{}, fmt.Errorf("unknown test kind %q", t.Kind)
}

// where names the node (and daemon) a test is about.
func where(t *spec.Test) string {
	switch t.Kind {
	case "bgp", "bgp-route", "ospf", "ospf6":
		return t.Node + " (FRR)"
	case "bird":
		return t.Node + " (BIRD)"
	case "traffic":
		return "traffic " + t.Run
	}
	return t.Node
}
