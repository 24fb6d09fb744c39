package spec

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/units"
)

// Test is one entry of the file's tests: (what nslab test checks on the
// deployed lab, each with its own wait): reachability and its absence, a
// route, an address or a neighbour in a node's kernel, a routing
// daemon's state read from the daemon, and a traffic run's figures.
type Test struct {
	Name string
	Kind string // one of TestKinds
	Path string // where it is in the file: tests[3]

	Node  string      // the node it is about (reach: the sender)
	Reach Expectation // reachable, unreachable: FROM -> TO

	Prefix   netip.Prefix // route: to; address: the address; bgp-route: the prefix
	Via      netip.Addr   // route: the next hop
	Dev      string       // route: the interface; address: the interface
	Table    int          // route: the table (0: main)
	Protocol string       // route: the kernel's protocol (static, kernel, bgp, ospf, ...); bird: the protocol's name
	Addr     netip.Addr   // neighbour: its address; bgp: the neighbour's address
	RouterID string       // ospf, ospf6: the neighbour's router ID
	State    string       // bgp: Established (default); ospf, ospf6: Full (default); bird: up (default)
	Prefixes int          // bgp: at least this many prefixes received; -1: not asked
	ASPath   string       // bgp-route: the AS path of the best path ("65002 65003"); "": any

	Run     string        // traffic: the traffic run
	Rate    string        // traffic: the rate to send at ("": the run's)
	MaxLoss float64       // traffic: loss at most this percent; -1: not asked
	MinRate uint64        // traffic: received at least this many packets per second; 0: not asked
	MaxP99  time.Duration // traffic: p99 latency at most this; 0: not asked

	Wait   time.Duration // retry until it passes or this much time passed; 0: once
	Every  time.Duration // between tries (default 1s)
	Points int           // for grading (default 1)
}

// TestKinds are the kinds of test, each the key that gives it.
var TestKinds = []string{"reachable", "unreachable", "route", "address", "neighbour", "bgp", "bgp-route", "ospf", "ospf6", "bird", "traffic"}

// testKeys are a test's keys (its kind's and the common ones), and
// testKindKeys each kind's own, from schema.go's tables.
var (
	testKeys     = keysOf(testDef)
	testKindKeys = func() map[string][]string {
		out := map[string][]string{}
		for k, m := range testDefs {
			out[k] = keysOf(*m)
		}
		return out
	}()
)

// parseTests reads tests: a list, each item one kind's key and the
// common keys.
func (r *reporter) parseTests(e kv, lab *Lab) {
	items, _ := r.list(e.v, "tests", "[{reachable: client -> 10.0.2.1}, {route: {node: r1, to: 10.0.2.0/24, via: 10.0.1.2}}]")
	for i, item := range items {
		path := fmt.Sprintf("tests[%d]", i)
		f := r.fields(item, path, "a test", testKeys...)
		t := &Test{Path: path, Prefixes: -1, MaxLoss: -1, Every: time.Second, Points: 1}
		var kinds []string
		for _, k := range TestKinds {
			if kv, ok := f[k]; ok {
				kinds = append(kinds, k)
				t.Kind = k
				r.parseTestKind(kv, t)
			}
		}
		if len(kinds) != 1 {
			r.errf(path, "a test is one of %s; this one has %s: give one per test", strings.Join(TestKinds, ", "), orNone(kinds))
			continue
		}
		r.parseTestCommon(f, t)
		lab.Tests = append(lab.Tests, t)
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " and ")
}

// parseTestCommon reads name, wait, every and points.
func (r *reporter) parseTestCommon(f map[string]kv, t *Test) {
	if v, ok := f["name"]; ok {
		t.Name, _ = r.str(v.v, v.path, "the test's name")
	}
	for key, d := range map[string]*time.Duration{"wait": &t.Wait, "every": &t.Every} {
		if v, ok := f[key]; ok {
			if s, ok := r.str(v.v, v.path, "a duration such as 30s"); ok {
				x, err := time.ParseDuration(s)
				if err != nil || x <= 0 {
					r.errf(v.path, "%s %q: write a duration such as 30s, 500ms or 2m", key, s)
				}
				*d = x
			}
		}
	}
	if v, ok := f["points"]; ok {
		t.Points, _ = r.integer(v.v, v.path, "the test's points", 0, 1000)
	}
	if t.Name == "" {
		t.Name = t.Describe()
	}
}

// parseTestKind reads the kind's own value.
func (r *reporter) parseTestKind(e kv, t *Test) {
	if t.Kind == "reachable" || t.Kind == "unreachable" {
		s, ok := r.str(e.v, e.path, "FROM -> TO")
		if !ok {
			return
		}
		x, err := parseExpectation(s, t.Kind == "reachable")
		if err != nil {
			r.errf(e.path, "%v", err)
			return
		}
		t.Reach, t.Node = x, x.From
		return
	}
	def := testDefs[t.Kind]
	kindKeys := testKindKeys[t.Kind]
	f := r.fields(e.v, e.path, "a "+t.Kind+" test", kindKeys...)
	for _, k := range def.required {
		if _, ok := f[k]; !ok {
			r.errf(e.path, "missing %s: (%s)", k, def.keyDoc(k))
		}
	}
	for k, v := range f {
		if s, ok := r.str(v.v, v.path, def.keyDoc(k)); ok {
			if err := t.set(k, s); err != nil {
				r.errf(v.path, "%v", err)
			}
		}
	}
}

// set sets one key of a test's kind from its text.
func (t *Test) set(key, s string) error {
	var err error
	switch key {
	case "node":
		t.Node = s
	case "to", "address", "prefix":
		return t.setPrefix(key, s)
	case "via":
		t.Via, err = netip.ParseAddr(s)
		return wrapUnit(err, "%q is not an address: write the next hop such as 10.0.1.2", s)
	case "neighbor":
		if t.Kind == "bgp" {
			t.Addr, err = netip.ParseAddr(s)
			return wrapUnit(err, "%q is not an address: write the BGP neighbour's address such as 10.0.1.2", s)
		}
		if _, err := netip.ParseAddr(s); err != nil || !netip.MustParseAddr(s).Is4() {
			return fmt.Errorf("%q is not a router ID: write the OSPF neighbour's router ID such as 10.0.0.2", s)
		}
		t.RouterID = s
	case "dev", "interface":
		t.Dev = s
	case "table":
		_, err = fmt.Sscan(s, &t.Table)
		return wrapUnit(err, "table %q: write the table's number (254 is main)", s)
	case "protocol":
		t.Protocol = s
	case "state":
		t.State = s
	case "prefixes":
		_, err = fmt.Sscan(s, &t.Prefixes)
		return wrapUnit(err, "prefixes %q: write how many prefixes must be received at least, such as 1", s)
	case "as-path":
		t.ASPath = s
	case "run":
		t.Run = s
	default:
		return t.setTraffic(key, s)
	}
	return nil
}

// setPrefix sets a route's destination, an address test's address, a
// bgp-route's prefix, or a neighbour's address.
func (t *Test) setPrefix(key, s string) error {
	var err error
	switch {
	case key == "address" && t.Kind == "neighbour":
		t.Addr, err = netip.ParseAddr(s)
		return wrapUnit(err, "%q is not an address: write one such as 10.0.1.2", s)
	case key == "to" && s == "default":
		t.Prefix = netip.MustParsePrefix("0.0.0.0/0")
		return nil
	}
	if t.Prefix, err = netip.ParsePrefix(s); err != nil {
		return fmt.Errorf("%q is not a prefix: write one such as 10.0.2.0/24 (an address with its length)", s)
	}
	if key != "address" {
		t.Prefix = t.Prefix.Masked()
	}
	return nil
}

// setTraffic sets a traffic test's figures.
func (t *Test) setTraffic(key, s string) error {
	switch key {
	case "rate":
		if _, _, err := units.ParseRate(s); err != nil {
			return err
		}
		t.Rate = s
	case "loss":
		p, err := units.ParsePercent(s)
		if err != nil {
			return fmt.Errorf("loss %q: %w", s, err)
		}
		t.MaxLoss = p
	case "received":
		pps, mbit, err := units.ParseRate(s)
		if err != nil || mbit != 0 {
			return fmt.Errorf("received %q: write a packet rate such as 190kpps (the receiver's packets per second at least)", s)
		}
		t.MinRate = pps
	case "p99":
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("p99 %q: write a duration such as 1ms (the 99th percentile of the latency at most)", s)
		}
		t.MaxP99 = d
	}
	return nil
}

func wrapUnit(err error, format string, args ...any) error {
	if err != nil {
		return fmt.Errorf(format, args...)
	}
	return nil
}

// Describe is the test in a line, its default name.
func (t *Test) Describe() string {
	switch t.Kind {
	case "reachable", "unreachable":
		return t.Reach.Line + " " + t.Kind
	case "route":
		s := fmt.Sprintf("%s has a route to %s", t.Node, t.Prefix)
		if t.Via.IsValid() {
			s += " via " + t.Via.String()
		}
		return s
	case "address":
		return fmt.Sprintf("%s:%s has %s", t.Node, t.Dev, t.Prefix)
	case "neighbour":
		return fmt.Sprintf("%s knows neighbour %s", t.Node, t.Addr)
	case "bgp":
		return fmt.Sprintf("%s's BGP session with %s %s", t.Node, t.Addr, t.WantState())
	case "bgp-route":
		return fmt.Sprintf("%s learned %s by BGP", t.Node, t.Prefix)
	case "ospf", "ospf6":
		return fmt.Sprintf("%s's %s neighbour %s %s", t.Node, strings.ToUpper(t.Kind), t.RouterID, t.WantState())
	case "bird":
		return fmt.Sprintf("%s's BIRD protocol %s %s", t.Node, t.Protocol, t.WantState())
	case "traffic":
		return "traffic " + t.Run
	}
	return t.Kind
}

// WantState is the state the test asks for: its state:, or its kind's
// default.
func (t *Test) WantState() string {
	if t.State != "" {
		return t.State
	}
	return map[string]string{"bgp": "Established", "ospf": "Full", "ospf6": "Full", "bird": "up"}[t.Kind]
}

// validateTests checks that every test names nodes, interfaces, daemons
// and traffic runs the lab has.
func validateTests(r *reporter, lab *Lab) {
	for _, t := range lab.Tests {
		p := t.Path + "." + t.Kind
		if t.Kind == "reachable" || t.Kind == "unreachable" {
			continue // with expect:'s lines, below
		}
		if t.Kind == "traffic" {
			if lab.TrafficRun(t.Run) == nil {
				r.errf(p+".run", "no traffic run %q in the lab: name one under traffic:", t.Run)
			}
			continue
		}
		n := lab.Node(t.Node)
		switch {
		case n == nil:
			hint := ""
			if s := nearest(t.Node, nodeNames(lab)); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			r.errf(p+".node", "%q is no node of the lab%s", t.Node, hint)
		case (t.Kind == "bgp" || t.Kind == "bgp-route" || t.Kind == "ospf" || t.Kind == "ospf6") && n.FRR == nil:
			r.errf(p+".node", "%s runs no FRR (no frr: under nodes.%s): a %s test reads FRR's own state; test a route: instead, or give the node frr:", t.Node, t.Node, t.Kind)
		case t.Kind == "bird" && n.BIRD == nil:
			r.errf(p+".node", "%s runs no BIRD (no bird: under nodes.%s): a bird test reads BIRD's own state", t.Node, t.Node)
		case t.Dev != "" && !n.hasDevice(t.Dev):
			r.errf(p, "%s is no interface of %s", t.Dev, t.Node)
		}
	}
}
