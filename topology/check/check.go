// Package check tests a deployed lab's reachability, like mininet's
// pingall: from every node to every address of the lab, a real ICMP echo
// sent from inside the node's namespace, compared with what the lab's
// file says (a path there and a path back for the reply, through the
// routes, NAT and firewalls on the way). It reports both kinds of
// surprise: pairs that should answer and do not, and pairs that answer
// although the file says they cannot. A firewall's drop is an expected
// silence.
package check

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/topology/probe"
	"github.com/nslab/nslab/topology/spec"
)

// Pair is one probe: from a node to an address, from the source address
// the kernel chooses, or from one of the node's interfaces' (an expect:
// line's FROM node:interface).
type Pair struct {
	From string `json:"from"`
	// FromInterface and Source: the interface whose address the echo was
	// sent from, and that address (unset: the kernel's choice).
	FromInterface string        `json:"from_interface,omitempty"`
	Source        netip.Addr    `json:"source,omitempty"`
	To            netip.Addr    `json:"to"`
	Owner         spec.Endpoint `json:"owner"` // who holds To
	Local         bool          `json:"local,omitempty"`
	// Expect: the routes give a path to To and one back for the reply.
	// Why says why not when they do not.
	Expect bool   `json:"expect"`
	Why    string `json:"why,omitempty"`
	// Filtered: a firewall on the way drops the echo or its reply (Why
	// names the rule).
	Filtered bool `json:"filtered,omitempty"`
	// Answered: an echo reply came back, after RTT.
	Answered bool          `json:"answered"`
	RTT      time.Duration `json:"rtt_ns,omitempty"`
	SendErr  string        `json:"send_error,omitempty"` // the kernel refused to send (no route)
}

// Sender names where the echo left: the node, or node:interface and its
// address.
func (p Pair) Sender() string {
	if p.FromInterface == "" {
		return p.From
	}
	if !p.Source.IsValid() {
		return p.From + ":" + p.FromInterface
	}
	return fmt.Sprintf("%s:%s (%s)", p.From, p.FromInterface, p.Source)
}

// OK reports whether the pair behaved as the routes say.
func (p Pair) OK() bool { return p.Expect == p.Answered }

// Broken: the routes say it answers and it does not.
func (p Pair) Broken() bool { return p.Expect && !p.Answered }

// Unexpected: it answers although the routes say it cannot.
func (p Pair) Unexpected() bool { return !p.Expect && p.Answered }

// Options tune the probes.
type Options struct {
	Timeout time.Duration // per echo; 0: 1 s
	Tries   int           // echoes per pair until one answers; 0: 2
	// Status gets a line on how a wait for convergence stands, at every
	// look at the routing tables (Converge); nil: none.
	Status func(string)
}

// Expected computes every pair and whether the lab's model (the file's,
// or a deployed lab's kernels' once read) says it answers, the file's
// expect: lines over the routes. It is pure.
// For a part of a lab that spans hosts, the pairs are from its own nodes
// to every address of the whole lab.
func Expected(l *spec.Lab) []Pair {
	var pairs []Pair
	m := l.Model()
	for _, n := range l.Nodes {
		if n.Segment {
			continue // a switch: no address to send from
		}
		for _, o := range m.Addresses() {
			p := Pair{From: n.Name, To: o.Addr, Owner: o.By}
			p.Expect, p.Local, p.Why, p.Filtered = expect(m, n.Name, o.Addr)
			if x, ok := m.Expect(n.Name, o.Addr, o.By); ok && !p.Local {
				p.Expect, p.Filtered = x.Reach, false
				p.Why = x.Says()
			}
			pairs = append(pairs, p)
		}
	}
	return append(pairs, sourced(m)...)
}

// sourced is the pairs of the expect: lines whose FROM names an
// interface: from that interface's address of the family of each address
// the line covers (but the node's own), expected as the last such line
// of the same FROM says. An interface without an address of that family
// makes a pair that cannot be sent, which says so.
func sourced(m *spec.Lab) []Pair {
	lines, addrs := m.Sourced(), m.Addresses()
	var pairs []Pair
	seen := map[string]bool{}
	for _, first := range lines {
		from := spec.Endpoint{Node: first.From, Interface: first.Source}
		if seen[from.String()] {
			continue
		}
		seen[from.String()] = true
		for _, o := range addrs {
			x, ok := lastCovering(lines, from, o)
			if !ok || o.By.Node == from.Node {
				continue
			}
			p := Pair{From: from.Node, FromInterface: from.Interface, To: o.Addr, Owner: o.By, Expect: x.Reach,
				Why: x.Says()}
			if p.Source = sourceOf(addrs, from, o.Addr); !p.Source.IsValid() {
				p.SendErr = fmt.Sprintf("%s has no %s address to send from", from, family(o.Addr))
			}
			pairs = append(pairs, p)
		}
	}
	return pairs
}

// lastCovering is the last of lines from that covers o.
func lastCovering(lines []spec.Expectation, from spec.Endpoint, o spec.Owned) (spec.Expectation, bool) {
	var found spec.Expectation
	ok := false
	for _, x := range lines {
		if x.From == from.Node && x.Source == from.Interface && x.Covers(o.Addr, o.By) {
			found, ok = x, true
		}
	}
	return found, ok
}

// sourceOf is the first of addrs that interface from holds in dst's
// family.
func sourceOf(addrs []spec.Owned, from spec.Endpoint, dst netip.Addr) netip.Addr {
	for _, o := range addrs {
		if o.By == from && o.Addr.Is4() == dst.Is4() {
			return o.Addr
		}
	}
	return netip.Addr{}
}

// expect says whether an echo from node to dst gets an answer by the
// file: a path there, and one from the destination back to the source
// address the packet arrives with (the sender's, or the one a NAT on the
// way gave it, which the NAT gives back on the reply's way).
func expect(l *spec.Lab, node string, dst netip.Addr) (ok, local bool, why string, filtered bool) {
	there, err := walk.Trace(l, spec.Endpoint{Node: node}, dst)
	if learned, ok := errors.AsType[*walk.LearnedError](err); ok {
		return true, false, fmt.Sprintf("by the routes the daemons learn: %s has none to %s yet", learned.Node, learned.To), false
	}
	if err != nil {
		return false, false, err.Error(), isFiltered(err)
	}
	if there.Local {
		return true, true, "", false
	}
	src := walk.SourceOf(l, spec.Endpoint{Node: node, Interface: there.Hops[0].Out}, dst)
	if !src.IsValid() {
		return false, false, fmt.Sprintf("%s has no %s address to send from", node, family(dst)), false
	}
	at := there.SourceAtDest(src)
	back, err := walk.TraceFlow(l, spec.Endpoint{Node: there.Dest.Node}, at, spec.Flow{Reply: true, Restore: there.Restore(src)})
	if learned, ok := errors.AsType[*walk.LearnedError](err); ok {
		return true, false, fmt.Sprintf("by the routes the daemons learn: %s has none back to %s yet", learned.Node, learned.To), false
	}
	if err != nil {
		return false, false, fmt.Sprintf("no way back for the reply from %s to %s: %v", there.Dest.Node, at, err), isFiltered(err)
	}
	if back.Dest.Node != node {
		return false, false, fmt.Sprintf("the reply from %s to %s goes to %s, not back to %s", there.Dest.Node, at, back.Dest.Node, node), false
	}
	return true, false, "", false
}

func isFiltered(err error) bool {
	var fe *walk.FilteredError
	return errors.As(err, &fe)
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// Run reads the lab's kernels (see lab.Running.Learn) and probes every
// pair of Expected on the running lab, all at once, and returns them in
// the same order. It runs in the caller's namespace; each
// probe opens its socket inside the sending node's namespace.
func Run(ctx context.Context, r *deployed.Opened, o Options) (Pairs, error) {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Tries <= 0 {
		o.Tries = 2
	}
	// The expectations are the kernels' addresses and routes; where they
	// differ from the file, r.Differences says.
	if err := r.Learn(); err != nil {
		return nil, err
	}
	pairs := Expected(r.Lab)
	errs := make([]error, len(pairs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			p := &pairs[i]
			if p.FromInterface != "" && !p.Source.IsValid() {
				return // nothing to send from: SendErr says so
			}
			res, err := probe.EchoFrom(r.Node(p.From).NS, p.Source, p.To, o.Tries, o.Timeout, false)
			if err != nil {
				errs[i] = fmt.Errorf("probe %s -> %s: %w", p.From, p.To, err)
				return
			}
			p.Answered, p.RTT = res.OK(), res.RTT
			if res.Err != nil {
				p.SendErr = res.Err.Error()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return pairs, err
		}
	}
	return pairs, byTheFile(pairs, r)
}

// byTheFile makes broken every pair that stayed silent only because a
// kernel lacks what the file declares: where the kernels' routes say
// silent and the file's own (static routes, no daemon's) say it answers.
// A pair is silent "as the routes say" only by routes the file or a
// daemon made, never because a route or address the file declares was
// lost. It is pure but for parsing the lab's source again.
func byTheFile(pairs Pairs, r *deployed.Opened) error {
	missing := deployed.Missing(r.Differences)
	if len(missing) == 0 {
		return nil
	}
	file, err := spec.Parse(r.Lab.File, r.Lab.Source)
	if err != nil {
		return fmt.Errorf("the lab's file again: %w", err)
	}
	if h := r.Lab.OnHost(); h != "" {
		if file, err = file.PartOf(h); err != nil {
			return err
		}
	}
	says := map[string]Pair{}
	for _, p := range Expected(file) {
		says[p.key()] = p
	}
	lacks := missing[0].String()
	if len(missing) > 1 {
		lacks += fmt.Sprintf(" (and %d more)", len(missing)-1)
	}
	for i, p := range pairs {
		f, ok := says[p.key()]
		if p.Expect || p.Answered || !ok || !f.Expect || f.Why != "" {
			continue
		}
		pairs[i].Expect, pairs[i].Filtered = true, false
		pairs[i].Why = "the file's routes say it answers, and the kernels lack what the file declares: " + lacks
	}
	return nil
}

// key names a pair: from where to which address.
func (p Pair) key() string { return p.From + ":" + p.FromInterface + ">" + p.To.String() }
