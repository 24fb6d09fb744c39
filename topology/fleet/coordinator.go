package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/nslab/nslab/topology/spec"
)

// Dialer reaches one host's agent.
type Dialer interface {
	Dial(ctx context.Context, global []string) (*Conn, error)
}

// HostError is a step that failed on one host.
type HostError struct {
	Host, Step string
	Err        error
}

func (e *HostError) Error() string { return fmt.Sprintf("host %s: %s: %v", e.Host, e.Step, e.Err) }
func (e *HostError) Unwrap() error { return e.Err }

// Coordinator is one open channel to the agent of every host of a plan.
type Coordinator struct {
	Plan *Plan
	// AsDeployed makes Destroy remove a host's lab of the plan's name
	// deployed from another file too (nslab destroy --as-deployed: the
	// lab was applied from an edited file since), though never a
	// Kubernetes share (another owner's).
	AsDeployed bool
	// Strict makes Deploy deploy strictly on every host (nslab deploy
	// --strict: a line a daemon or a startup script refuses fails it).
	Strict bool
	// Offsets is each agent's clock less the coordinator's, measured at
	// the hello as the middle of its round trip (RTT/2 is its bound).
	Offsets map[string]Offset
	conns   map[string]*Conn
}

// Offset is a host's clock against the coordinator's.
type Offset struct {
	Offset, RTT time.Duration
}

// Open reaches every host's agent in parallel, and gives each the plan and
// the file; the agents check the plan against their own. If any host
// fails, every channel is closed and the error names each host that
// failed, and the step.
func Open(ctx context.Context, p *Plan, file []byte, dialers map[string]Dialer, global []string) (*Coordinator, error) {
	c := &Coordinator{Plan: p, Offsets: map[string]Offset{}, conns: map[string]*Conn{}}
	var mu sync.Mutex
	err := c.each(p.Hosts(), func(_ int, host string) error {
		conn, err := dialers[host].Dial(ctx, global)
		if err != nil {
			return &HostError{host, "reach the agent", err}
		}
		off, err := clockOffset(ctx, conn)
		if err == nil {
			_, err = conn.Call(ctx, Request{Op: OpPlan, Plan: p, Host: host, File: file})
		}
		conn.asked = func(ctx context.Context, ask map[string]json.RawMessage) Request {
			return Request{Op: OpAnswer, Answers: c.relayHops(ctx, ask), Clocks: c.clocksFrom(host)}
		}
		mu.Lock()
		defer mu.Unlock()
		c.conns[host] = conn
		if err != nil {
			return &HostError{host, "hand over the plan", err}
		}
		c.Offsets[host] = off
		return nil
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// clockSamples is how many hellos measure an agent's clock.
const clockSamples = 8

// clockOffset measures the agent's clock against this one's as NTP
// does: of several hellos, the one of the shortest round trip, its
// clock taken to be read at the middle of the trip; the error is at most
// half that trip.
func clockOffset(ctx context.Context, conn *Conn) (Offset, error) {
	best := Offset{RTT: time.Hour}
	for range clockSamples {
		t0 := time.Now()
		h, err := conn.Hello(ctx)
		rtt := time.Since(t0)
		if err != nil {
			return Offset{}, err
		}
		if rtt < best.RTT {
			best = Offset{Offset: time.Unix(0, h.Clock).Sub(t0.Add(rtt / 2)), RTT: rtt}
		}
	}
	return best, nil
}

// Close ends every channel.
func (c *Coordinator) Close() {
	for _, conn := range c.conns {
		conn.Close()
	}
}

// each runs f for each of hosts at once, and joins their errors in that
// order.
func (c *Coordinator) each(hosts []string, f func(i int, host string) error) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { errs[i] = f(i, h) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// relayHops sends each host's message of a bench's ask to that host's
// agent, all at once, and gathers their replies; a host that cannot be
// asked is answered with an error that names it.
func (c *Coordinator) relayHops(ctx context.Context, ask map[string]json.RawMessage) map[string]json.RawMessage {
	hosts := slices.Sorted(maps.Keys(ask))
	replies := make([]json.RawMessage, len(hosts))
	_ = c.each(hosts, func(i int, host string) error {
		conn := c.conns[host]
		if conn == nil {
			replies[i] = errorReply(fmt.Errorf("host %s is not among the lab's", host))
			return nil
		}
		r, err := conn.Call(ctx, Request{Op: OpHops, Body: ask[host]})
		if err != nil {
			replies[i] = errorReply(&HostError{host, "read its hops", err})
			return nil
		}
		replies[i] = r.Body
		return nil
	})
	out := map[string]json.RawMessage{}
	for i, h := range hosts {
		out[h] = replies[i]
	}
	return out
}

// clocksFrom is every host's clock less host's, from the offsets the
// hellos measured against this one's: the error is both offsets' errors.
func (c *Coordinator) clocksFrom(host string) map[string]Clock {
	from := c.Offsets[host]
	out := map[string]Clock{}
	for h, o := range c.Offsets {
		out[h] = Clock{Offset: o.Offset - from.Offset, Error: (o.RTT + from.RTT) / 2}
	}
	return out
}

// errorReply is a hops reply that says why there is none.
func errorReply(err error) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": err.Error()}) // a map of strings always encodes
	return b
}

// Result is what a verb printed on one host, and its exit code.
type Result struct {
	Host           string
	Code           int
	Stdout, Stderr string
}

// Run runs the verb args (FileArg for the lab's file) on every host's
// share at once. The error is for hosts whose agent could not be asked;
// a verb that failed has its code in its Result.
func (c *Coordinator) Run(ctx context.Context, args ...string) ([]Result, error) {
	return c.RunOn(ctx, c.Plan.Hosts(), args...)
}

// RunOn is Run on some of the hosts.
func (c *Coordinator) RunOn(ctx context.Context, hosts []string, args ...string) ([]Result, error) {
	on := slices.DeleteFunc(c.Plan.Hosts(), func(h string) bool { return !slices.Contains(hosts, h) }) // in the plan's order
	res := make([]Result, len(on))
	err := c.each(on, func(i int, host string) error {
		r, err := c.conns[host].Call(ctx, Request{Op: OpRun, Args: args})
		res[i] = Result{Host: host, Code: r.Code, Stdout: r.Stdout, Stderr: r.Stderr}
		if err != nil {
			res[i].Code = -1 // not asked: the error says why
			return &HostError{host, args[0], err}
		}
		return nil
	})
	return res, err
}

// Failed lists the results whose verb ran and failed (a host whose agent
// could not be asked is in Run's error instead).
func Failed(res []Result) []Result {
	return slices.DeleteFunc(slices.Clone(res), func(r Result) bool { return r.Code == 0 || r.Code == -1 })
}

// CheckMTU asks each host's agent whether a packet of the size each of
// its VXLAN links makes (the interface's MTU and VXLAN's overhead) with DF
// set reaches the other end's host and is answered; both ways, since each
// host asks. A link that does not fit is refused, naming the largest MTU
// that does.
func (c *Coordinator) CheckMTU(ctx context.Context) error {
	return c.each(c.Plan.Hosts(), func(_ int, host string) error {
		var errs []error
		p := prober{conn: c.conns[host], asked: map[netip.Addr][2]int{}}
		for _, t := range c.Plan.Share(host).Tunnels {
			size := t.MTU + spec.VXLANOverhead(t.RemoteIP)
			largest, err := p.largest(ctx, t.RemoteIP, size)
			if err != nil {
				return &HostError{host, "probe the underlay's MTU to host " + t.RemoteHost, err}
			}
			if largest < size {
				errs = append(errs, fmt.Errorf("link %s <-> %s (host %s to host %s): its interfaces' MTU %d makes %d-byte packets on the underlay, and from %s to %s the largest answered with DF set is %d: set mtu: %d or less on both ends (or make the underlay carry %d)",
					t.Local, t.Remote, host, t.RemoteHost, t.MTU, size, t.LocalIP, t.RemoteIP, largest, largest-spec.VXLANOverhead(t.RemoteIP), size))
			}
		}
		return errors.Join(errs...)
	})
}

// prober asks one agent for the underlay's MTU to each other host once
// per size it needs to know.
type prober struct {
	conn  *Conn
	asked map[netip.Addr][2]int // size asked, largest answered
}

func (p prober) largest(ctx context.Context, to netip.Addr, size int) (int, error) {
	if a, ok := p.asked[to]; ok && (a[1] < a[0] || size <= a[0]) {
		return min(a[1], size), nil // known: the largest answered, or a size that fits
	}
	r, err := p.conn.Call(ctx, Request{Op: OpMTU, To: to, Size: size})
	if err != nil {
		return 0, err
	}
	p.asked[to] = [2]int{size, r.Largest}
	return r.Largest, nil
}
