package sample

import (
	"context"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

func TestRatesAndSteady(t *testing.T) {
	mk := func(at time.Duration, rx uint64) Sample {
		return Sample{At: at, Counters: []Counters{{RxPackets: rx, RxBytes: rx * 60, TxDropped: rx / 100}}}
	}
	s := []Sample{mk(0, 0), mk(900*time.Millisecond, 500), mk(1900*time.Millisecond, 1500), mk(2900*time.Millisecond, 2500), mk(3100*time.Millisecond, 2600)}
	a, b, ok := Steady(s)
	if !ok || a.At != 900*time.Millisecond || b.At != 2900*time.Millisecond {
		t.Fatalf("steady window %v..%v", a.At, b.At)
	}
	r := Rates(a, b)[0]
	if r.RxPPS != 1000 || r.RxMbps != 1000*60*8/1e6 || r.Drops != 20 {
		t.Errorf("rates %+v", r)
	}
	if _, _, ok := Steady(s[:3]); ok {
		t.Error("a window from three samples")
	}
}

// deployPair deploys examples/pair.yaml under a random name.
func deployPair(t *testing.T) *spec.Lab {
	return labdeploy.Example(t, "pair.yaml", "s")
}

// TestPrivilegedCountsMatchPing sends a known number of pings and checks
// the sampler sees them at both ends.
func TestPrivilegedCountsMatchPing(t *testing.T) {
	l := deployPair(t)
	s, err := New(labdeploy.Open(t, l).Opened, []Target{{Node: "ns1", Namespace: l.Namespace("ns1"), Interface: "veth1"}, {Node: "ns2", Namespace: l.Namespace("ns2"), Interface: "veth2"}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	// The first echo also costs an ARP request and reply.
	if got, err := labtest.Ping(ns.DefaultDir, l.Namespace("ns1"), l.Node("ns2").Interface("veth2").Addresses[0].Addr(), 5, time.Second); err != nil || got != 5 {
		t.Fatalf("ping: %d, %v", got, err)
	}
	after, _ := s.Read()
	tx := after.Counters[0].Sub(before.Counters[0])
	rx := after.Counters[1].Sub(before.Counters[1])
	if tx.TxPackets != 6 || rx.RxPackets != 6 || tx.RxPackets != 6 || after.At <= before.At {
		t.Errorf("ns1 tx %d rx %d, ns2 rx %d; want 6 each (5 echoes + ARP)", tx.TxPackets, tx.RxPackets, rx.RxPackets)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	n := 0
	all, err := s.Run(ctx, 50*time.Millisecond, func(Sample) { n++ })
	if err != nil || len(all) < 4 || n != len(all) {
		t.Errorf("run gave %d samples (%d callbacks): %v", len(all), n, err)
	}
}

// tappedPair deploys examples/pair.yaml and opens a counter of the
// control frames ns1:veth1 sends and one of those ns2:veth2 receives
// (closed when the test ends).
func tappedPair(t *testing.T) (*spec.Lab, *lab.Running, *Neighbours, *Neighbours) {
	t.Helper()
	l := deployPair(t)
	r := labdeploy.Open(t, l)
	var taps [2]*Neighbours
	for i, x := range []struct {
		ep   spec.Endpoint
		open func(*ns.NS, int, bool) (*Neighbours, error)
	}{{spec.Endpoint{Node: "ns1", Interface: "veth1"}, CountSentControl}, {spec.Endpoint{Node: "ns2", Interface: "veth2"}, CountNeighbours}} {
		link, err := r.Link(x.ep)
		if err != nil {
			t.Fatal(err)
		}
		if taps[i], err = x.open(r.Node(x.ep.Node).NS, link.Attrs().Index, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(taps[i].Close)
	}
	return l, r, taps[0], taps[1]
}

// TestPrivilegedSentControlMatchesPeer: the counter of control frames an
// interface sends agrees with its peer's count of the control frames it
// receives (on a veth both can be read): the ARP request and the echoes
// (not UDP, so not a run's).
func TestPrivilegedSentControlMatchesPeer(t *testing.T) {
	l, _, sent, received := tappedPair(t)
	// The first echo costs ns1 an ARP request.
	if got, err := labtest.Ping(ns.DefaultDir, l.Namespace("ns1"), l.Node("ns2").Interface("veth2").Addresses[0].Addr(), 5, time.Second); err != nil || got != 5 {
		t.Fatalf("ping: %d, %v", got, err)
	}
	s, _ := sent.Count()
	n, _ := received.Count()
	if s < 6 || s != n {
		t.Errorf("ns1 sent %d control frames, ns2 received %d: want the same, the ARP request and 5 echoes at least", s, n)
	}
}

// TestPrivilegedSamplerUnderChurn: while another socket adds and deletes
// links and addresses in ns2 in a loop (50 changes at least), the sampler
// is made and reads every target every time, without an error.
func TestPrivilegedSamplerUnderChurn(t *testing.T) {
	l := deployPair(t)
	changes := labtest.Churn(t, labtest.Handle(t, ns.DefaultDir, l.Namespace("ns2")))
	for i := 0; changes.Load() < 50; i++ {
		s, err := New(labdeploy.Open(t, l).Opened, []Target{{Node: "ns1", Namespace: l.Namespace("ns1"), Interface: "veth1"}, {Node: "ns2", Namespace: l.Namespace("ns2"), Interface: "veth2"}})
		if err != nil {
			t.Fatalf("new sampler %d under churn: %v", i, err)
		}
		for range 10 {
			got, err := s.Read()
			if err != nil || len(got.Counters) != 2 {
				t.Fatalf("read %d under churn: %d counters, %v", i, len(got.Counters), err)
			}
		}
	}
}
