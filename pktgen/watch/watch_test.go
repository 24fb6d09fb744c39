package watch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// writeLive appends events to path.
func writeLive(t *testing.T, path string, partial string, events ...report.LiveEvent) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, e := range events {
		if err := report.WriteLive(f, e); err != nil {
			t.Fatal(err)
		}
	}
	f.WriteString(partial)
}

// TestBenchTail: the status follows the live file as it grows, takes
// only whole lines, starts again when a new bench truncates it, and says
// a bench killed before its end line is not running.
func TestBenchTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bench.jsonl")
	tail := &benchTail{path: p}
	if tail.read() != nil {
		t.Fatal("a status without a file")
	}
	me := os.Getpid()
	writeLive(t, p, `{"type":"interval","traf`, report.LiveEvent{Type: report.LiveStart, PID: me, Traffic: "ab"},
		report.LiveEvent{Type: report.LiveInterval, Frame: 64, At: 1, Hops: []report.LiveHop{{Node: "r", Interface: "e0", RxPPS: 10}}})
	s := tail.read()
	if s == nil || !s.Running || s.Traffic != "ab" || s.Last == nil || s.Last.At != 1 {
		t.Fatalf("after an interval: %+v", s)
	}
	writeLive(t, p, `fic":"ab","at":2}`+"\n") // the half line, finished
	writeLive(t, p, "", report.LiveEvent{Type: report.LiveEnd, Verdicts: []string{"ab: offered rate"}})
	if s := tail.read(); s.Running || s.End == nil || s.Last.At != 2 || !strings.Contains(s.Line(), "offered rate") {
		t.Fatalf("after the half line and the end: %+v", s)
	}
	os.Truncate(p, 0)
	writeLive(t, p, "", report.LiveEvent{Type: report.LiveStart, PID: 1 << 30, Traffic: "cd"})
	if s := tail.read(); s == nil || s.Traffic != "cd" || s.Running {
		t.Fatalf("a new bench whose process is gone: %+v", s)
	}
}

// testLab is a Lab of two nodes, a and r, sampled on a:e0 and r:e0.
func testLab() *Lab {
	l := &spec.Lab{Name: "x", Nodes: []*spec.Node{{Name: "a"}, {Name: "r", CPUs: spec.CPUSet{1}}}}
	return &Lab{Name: "x", Spec: l, targets: []sample.Target{{Node: "a", Interface: "e0"}, {Node: "r", Interface: "e0"}}}
}

// TestDelta: rates over the interval, drops counted in it, IP MIB
// forwarding and discards per node, and the node's CPUs its placement's.
func TestDelta(t *testing.T) {
	w := testLab()
	cpuA := map[int][]uint64{0: {0, 0, 0, 100, 0, 0, 0, 0}, 1: {0, 0, 0, 100, 0, 0, 0, 0}}
	cpuB := map[int][]uint64{0: {0, 0, 0, 200, 0, 0, 0, 0}, 1: {0, 0, 50, 150, 0, 0, 0, 0}} // cpu1 50% busy
	a := &Snapshot{Interfaces: sample.Sample{At: time.Second, Counters: []sample.Counters{{TxPackets: 100}, {RxPackets: 90}}}, CPU: cpuA,
		Nodes: map[string]NodeCounters{"r": {MIB: map[string]uint64{"ForwDatagrams": 10, "InDiscards": 1}}, "a": {}}}
	b := &Snapshot{Interfaces: sample.Sample{At: 3 * time.Second, Counters: []sample.Counters{{TxPackets: 2100, TxBytes: 250000}, {RxPackets: 2080, RxDropped: 5}}}, CPU: cpuB,
		Nodes: map[string]NodeCounters{"r": {MIB: map[string]uint64{"ForwDatagrams": 2010, "InDiscards": 4}}, "a": {}}}
	v := w.Delta(a, b)
	if v.Interval != 2 || v.Interfaces[0].TxPPS != 1000 || v.Interfaces[0].TxMbps != 1 || v.Interfaces[1].RxPPS != 995 || v.Interfaces[1].RxDrops != 5 {
		t.Fatalf("interfaces: %+v", v.Interfaces)
	}
	r := v.Nodes[1]
	if r.Node != "r" || r.ForwardedPPS != 1000 || r.Discards != 3 || r.CPUs != "1" || r.Busy != 50 || !r.Placed || v.Nodes[0].Busy != 25 || v.Nodes[0].Placed {
		t.Fatalf("nodes: %+v", v.Nodes)
	}
	v.Sort("drops")
	if v.Interfaces[0].Node != "r" {
		t.Fatalf("sorted by drops: %+v", v.Interfaces)
	}
	v.Sort("tx")
	if v.Interfaces[0].Node != "a" {
		t.Fatalf("sorted by tx: %+v", v.Interfaces)
	}
	var out bytes.Buffer
	v.WriteTable(&out)
	if !strings.Contains(out.String(), "FORWARDED PPS") || !strings.Contains(out.String(), "1000") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// watchedCRS deploys the client-router-server lab under a name of its own
// (destroyed when the test ends) and opens it for watching.
func watchedCRS(t *testing.T) (*lab.Manager, *spec.Lab, *Lab) {
	t.Helper()
	name := labtest.Name("w")
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Parse("crs.yaml", labtest.Rename(data, name))
	if err != nil {
		t.Fatal(err)
	}
	m := &lab.Manager{StateDir: t.TempDir()}
	if _, err := m.Deploy(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Destroy(name) })
	w, err := Open(m, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return m, l, w
}

// TestPrivilegedWatch: a watched lab's counters are the kernel's, read
// between two reads of the kernel's own, while traffic flows; once the
// lab is destroyed, Read says it is gone and the lab is closed.
func TestPrivilegedWatch(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	m, l, w := watchedCRS(t)
	name := l.Name
	if len(w.Targets()) != 4 {
		t.Fatalf("targets %v", w.Targets())
	}
	h := labtest.Handle(t, m.NetnsDirOrDefault(), l.Namespace("ns1"))
	stop := make(chan struct{})
	go func() { // traffic while it reads: ns1 pings the server
		for {
			select {
			case <-stop:
				return
			default:
				labtest.Ping(m.NetnsDirOrDefault(), l.Namespace("ns1"), l.Node("ns3").Interfaces[0].Addresses[0].Addr(), 1, 50*time.Millisecond)
			}
		}
	}()
	for range 5 {
		before, _ := h.LinkByName("veth1")
		s, err := w.Read()
		after, _ := h.LinkByName("veth1")
		if err != nil {
			t.Fatal(err)
		}
		got, lo, hi := s.Interfaces.Counters[0].TxPackets, before.Attrs().Statistics.TxPackets, after.Attrs().Statistics.TxPackets
		if got < lo || got > hi || s.Nodes["ns2"].MIB == nil {
			t.Fatalf("ns1:veth1 tx %d, the kernel's %d before and %d after; ns2's MIB %v", got, lo, hi, s.Nodes["ns2"].MIB)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	impairedDrops(t, m, l, w)
	if _, err := m.Destroy(name); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Read(); !errors.Is(err, ErrGone) || w.run != nil {
		t.Fatalf("after destroy: %v, lab still open: %v", err, w.run != nil)
	}
}

// impairedDrops: an impairment set while the lab is watched (nslab impair
// while top runs) is found, and the packets it drops are counted.
func impairedDrops(t *testing.T, m *lab.Manager, l *spec.Lab, w *Lab) {
	r, err := m.Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Impair(spec.Endpoint{Node: "ns1", Interface: "veth1"}, &spec.Impair{Rate: 8000, Limit: 2}); err != nil {
		t.Fatal(err)
	}
	w.qdiscs = time.Time{} // as if qdiscEvery had passed
	a, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	labtest.Ping(m.NetnsDirOrDefault(), l.Namespace("ns1"), l.Node("ns3").Interfaces[0].Addresses[0].Addr(), 200, time.Millisecond)
	b, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Interfaces.Counters[0].Sub(a.Interfaces.Counters[0]).QdiscDrops; d == 0 {
		t.Fatalf("200 pings through a tbf of 8 kbit/s and 2 packets: no qdisc drop counted (%+v)", b.Interfaces.Counters[0])
	}
}
