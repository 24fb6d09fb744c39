package bench

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/tcpflow"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// twoWays is the client-router-server lab with a run each way, a second
// client (ns4) sending to the server too, and the server's sink ports
// apart.
func twoWays(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, _, _ := strings.Cut(string(data), "traffic:")
	src = strings.Replace(src, "      veth2: {addresses: [10.0.2.254/24]}\n",
		"      veth2: {addresses: [10.0.2.254/24]}\n      veth4: {addresses: [10.0.4.254/24]}\n", 1)
	src = strings.Replace(src, "links:\n", `  ns4:
    interfaces:
      veth4-peer: {addresses: [10.0.4.1/24]}
    routes:
      - {to: default, via: 10.0.4.254}
links:
  - endpoints: [ns2:veth4, ns4:veth4-peer]
`, 1)
	return []byte(src + `traffic:
  - {name: ab, group: both, from: ns1:veth1, to: 10.0.2.1, count: 20000, rate: 50kpps, engine: userspace}
  - {name: ba, group: both, from: ns3:veth2-peer, to: 10.0.1.1, count: 20000, rate: 50kpps, engine: userspace}
  - {name: cb, from: ns4:veth4-peer, to: 10.0.2.1, dst_ports: 10, count: 20000, rate: 50kpps, engine: userspace}
`)
}

// runTogether measures the named runs of the lab together, once.
func runTogether(t *testing.T, l *spec.Lab, names ...string) *report.GroupReport {
	t.Helper()
	return runSelected(t, l, Selection{}, names...)
}

// runSelected is runTogether with the selection's changes to the runs.
func runSelected(t *testing.T, l *spec.Lab, sel Selection, names ...string) *report.GroupReport {
	t.Helper()
	return runGroup(t, l, sel, Options{Interval: 100 * time.Millisecond}, names...)
}

// runGroup is runSelected with the bench's options.
func runGroup(t *testing.T, l *spec.Lab, sel Selection, o Options, names ...string) *report.GroupReport {
	t.Helper()
	ts, err := Streams(l, names, sel)
	if err != nil {
		t.Fatal(err)
	}
	r := labdeploy.Open(t, l)
	g, err := NewGroup(r, ts, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	rep, err := g.Run(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// exactlyCounted requires a run of the group to have sent its 20000
// packets, each either received or dropped at a named place. Two runs at
// 50 kpps through one router on two CPUs lose nothing on the host, but
// the VM's emulated CPUs fill the router's backlog now and then (3135
// lost once, every one named): what these tests check is the counting,
// not the speed.
func exactlyCounted(t *testing.T, r *report.Report) {
	t.Helper()
	if r.Sent != 20000 || r.Received == 0 || r.Loss < 0 || r.Received+uint64(r.Loss) != r.Sent || uint64(r.Loss) != r.NamedDrops || r.Unaccount != 0 {
		t.Errorf("run %s: sent %d received %d loss %d named %d unaccounted %d", r.Traffic, r.Sent, r.Received, r.Loss, r.NamedDrops, r.Unaccount)
	}
}

// TestPrivilegedTwoDirections: a run each way through a router at once
// (the group in the file), each counted exactly at its receiver, and the
// two overlapping in time by their engines' start and end stamps.
func TestPrivilegedTwoDirections(t *testing.T) {
	l := labdeploy.Deploy(t, labtest.Rename(twoWays(t), labtest.Name("g")))
	g := runTogether(t, l, "both")
	if len(g.Streams) != 2 {
		t.Fatalf("%d streams", len(g.Streams))
	}
	for _, r := range g.Streams {
		exactlyCounted(t, r)
		if len(r.Shared) != 0 {
			t.Errorf("run %s: shared %v: the two runs have receivers of their own", r.Traffic, r.Shared)
		}
	}
	a, b := g.Streams[0], g.Streams[1]
	if !a.Started.Before(b.Ended) || !b.Started.Before(a.Ended) || g.Aggregate.Overlap < 300*time.Millisecond {
		t.Errorf("the runs did not overlap: %s %v..%v, %s %v..%v (overlap %v)", a.Traffic, a.Started, a.Ended, b.Traffic, b.Started, b.Ended, g.Aggregate.Overlap)
	}
	if ag := g.Aggregate; ag.Sent != 40000 || ag.Received != g.Streams[0].Received+g.Streams[1].Received || ag.Unaccount != 0 {
		t.Errorf("aggregate %+v", ag)
	}
	assertGroupFormats(t, g)
}

// TestPrivilegedSharedReceiver: two clients send to one server interface
// at once; each run is counted apart by its UDP destination port, exactly,
// the interface's own counter carrying both, and the report says so.
func TestPrivilegedSharedReceiver(t *testing.T) {
	l := labdeploy.Deploy(t, labtest.Rename(twoWays(t), labtest.Name("g")))
	g := runTogether(t, l, "ab", "cb")
	both := uint64(0)
	for _, r := range g.Streams {
		both += r.Received
	}
	for _, r := range g.Streams {
		exactlyCounted(t, r)
		if !strings.Contains(r.CountedBy, "UDP destination port") || len(r.Shared) == 0 {
			t.Errorf("run %s: counted by %q, shared %v", r.Traffic, r.CountedBy, r.Shared)
		}
		if last := r.Hops[len(r.Hops)-1]; last.RxPackets < both {
			t.Errorf("run %s: the shared receiver's own counter says %d, want both runs", r.Traffic, last.RxPackets)
		}
	}
	if ag := g.Aggregate; ag.Sent != 40000 || ag.Received != both || ag.Unaccount != 0 || len(ag.Counting) != 2 {
		t.Errorf("aggregate %+v", ag)
	}
}

// assertGroupFormats: every format carries each run and the aggregate.
func assertGroupFormats(t *testing.T, g *report.GroupReport) {
	t.Helper()
	for _, f := range report.Formats {
		var out strings.Builder
		if err := report.WriteGroups(&out, f, []*report.GroupReport{g}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{g.Streams[0].Traffic, g.Streams[1].Traffic, "40000"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s output lacks %q:\n%s", f, want, out.String())
			}
		}
	}
}

// TestStreamsSelection: a group selects its runs, runs measured together
// must be told apart at their senders and receivers, and sweep the same
// frame sizes.
func TestStreamsSelection(t *testing.T) {
	l, err := spec.Parse("g.yaml", twoWays(t))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Streams(l, []string{"both"}, Selection{})
	if err != nil || len(ts) != 2 || ts[0].Name != "ab" || ts[1].Name != "ba" {
		t.Fatalf("group both: %v, %v", ts, err)
	}
	if _, err := Streams(l, []string{"ab", "nope"}, Selection{}); err == nil || !strings.Contains(err.Error(), `no traffic run or group "nope"`) {
		t.Errorf("unknown name: %v", err)
	}
	cb := *l.TrafficRun("cb")
	cb.DstPorts = [2]int{}
	if err := checkStreams([]*spec.Traffic{l.TrafficRun("ab"), &cb}); err == nil || !strings.Contains(err.Error(), "dst_ports") {
		t.Errorf("two runs to one port: %v", err)
	}
	twin := *l.TrafficRun("ab")
	twin.Name = "twin"
	if err := checkStreams([]*spec.Traffic{l.TrafficRun("ab"), &twin}); err == nil || !strings.Contains(err.Error(), "both send from ns1:veth1") {
		t.Errorf("two runs from one interface: %v", err)
	}
	l.TrafficRun("ba").Frames = []int{64, 128}
	if _, err := Streams(l, []string{"both"}, Selection{}); err == nil || !strings.Contains(err.Error(), "same frame sizes") {
		t.Errorf("different frame sizes: %v", err)
	}
}

// stuck is an engine that fails at once (fail) or runs until cancelled.
type stuck struct{ fail bool }

func (s stuck) Name() string { return "stuck" }
func (s stuck) Run(ctx context.Context, _ engine.Job) (*engine.Result, error) {
	if s.fail {
		return nil, errors.New("the device went away")
	}
	<-ctx.Done()
	return &engine.Result{Stopped: true}, ctx.Err()
}

// TestFailingStreamStopsTheOthers: when one stream's engine fails, the
// others are cancelled rather than run to their end.
func TestFailingStreamStopsTheOthers(t *testing.T) {
	g := &Group{benches: []*Bench{{eng: stuck{}}, {eng: stuck{fail: true}}, {eng: stuck{}}}}
	gr := &groupRun{jobs: make([]engine.Job, 3), tcp: make([]*tcpMeasure, 3), states: []*running{{}, {}, {}},
		results: make([]*engine.Result, 3), flows: make([]*tcpflow.Result, 3), errs: make([]error, 3)}
	errs := gr.errs
	done := make(chan struct{})
	go func() {
		g.runEngines(context.Background(), gr)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the other streams kept running after one failed")
	}
	if !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[2], context.Canceled) || errs[1] == nil {
		t.Errorf("errors %v", errs)
	}
}

// TestPrivilegedSharedDrops: two runs overload a rate-limited link they
// share (2 Mbit/s: about 3900 pps of 64-byte frames, which even the VM's
// emulated senders exceed); the aggregate names the drops at that link's qdisc with every
// counter taken once and nothing unaccounted, and each run, counted apart,
// puts its losses at the counters it shares.
func TestPrivilegedSharedDrops(t *testing.T) {
	l := labdeploy.Deploy(t, labtest.Rename(twoWays(t), labtest.Name("g")))
	r := labdeploy.Open(t, l)
	if err := r.Impair(spec.Endpoint{Node: "ns2", Interface: "veth2"}, &spec.Impair{Rate: 2e6, Limit: 100}); err != nil {
		t.Fatal(err)
	}
	g := runTogether(t, l, "ab", "cb")
	ag := g.Aggregate
	var lost int64
	for _, s := range g.Streams {
		lost += s.Loss
		if s.Loss <= 0 || s.Unaccount != 0 || len(s.Drops) == 0 || s.Drops[len(s.Drops)-1].Place != "at counters shared with other streams" {
			t.Errorf("run %s: loss %d unaccounted %d drops %+v", s.Traffic, s.Loss, s.Unaccount, s.Drops)
		}
	}
	named := false
	for _, d := range ag.Drops {
		named = named || d.Place == "qdisc of ns2:veth2" && strings.Contains(d.Counted, "overlimits (times its rate held a packet back)")
	}
	if ag.Loss <= 0 || ag.Loss != lost || ag.Unaccount != 0 || !named {
		t.Errorf("aggregate: loss %d (runs %d), unaccounted %d, drops %+v", ag.Loss, lost, ag.Unaccount, ag.Drops)
	}
}

// TestPrivilegedFreshSwitchBothWays runs the switch example's two-way group
// at full speed the moment the lab is deployed: the bridge's own IGMP and
// MLD reports of its first seconds reach both receivers, and must be
// counted as the control frames they are, not as the runs' packets.
func TestPrivilegedFreshSwitchBothWays(t *testing.T) {
	l := labdeploy.Example(t, "switch.yaml", "g")
	rep := runSelected(t, l, Selection{Duration: time.Second}, "both-ways")
	var control uint64
	for _, r := range rep.Streams {
		control += r.Hops[len(r.Hops)-1].Neighbour
		if r.Unaccount != 0 || r.Sent == 0 {
			t.Errorf("run %s: sent %d received %d unaccounted %d", r.Traffic, r.Sent, r.Received, r.Unaccount)
		}
	}
	if rep.Aggregate.Unaccount != 0 || rep.Aggregate.Overlap < 500*time.Millisecond {
		t.Errorf("aggregate %+v", rep.Aggregate)
	}
	t.Logf("control frames counted at the receivers: %d", control)
}

// TestPrivilegedGroupSweep: runs measured together sweep frame sizes as
// one run does, through Sweep (deploying the lab and destroying it), each
// frame size's group written to the results file as one JSON line.
func TestPrivilegedGroupSweep(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	src := labtest.Rename(twoWays(t), labtest.Name("g"))
	l, err := spec.Parse("g.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Streams(l, []string{"both"}, Selection{Frames: []int{64, 512}, Count: 5000})
	if err != nil {
		t.Fatal(err)
	}
	results, err := os.Create(t.TempDir() + "/out.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer results.Close()
	m := &lab.Manager{StateDir: t.TempDir()}
	out, err := Sweep(context.Background(), m, Request{Lab: l, Traffic: ts[0], Streams: ts, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Groups) != 2 || out.Groups[0].Frame != 64 || out.Groups[1].Frame != 512 || !out.Deployed {
		t.Fatalf("outcome: %d groups, deployed %v", len(out.Groups), out.Deployed)
	}
	for _, g := range out.Groups {
		if g.Aggregate.Sent != 10000 || g.Aggregate.Received != 10000 || g.Aggregate.Unaccount != 0 {
			t.Errorf("%d-byte frames: aggregate %+v", g.Frame, g.Aggregate)
		}
	}
	b, err := os.ReadFile(results.Name())
	if err != nil || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"aggregate"`) {
		t.Errorf("results file: %v %q", err, b)
	}
	if m.Store().Deployed(l) {
		t.Error("the sweep left the lab it deployed")
	}
}
