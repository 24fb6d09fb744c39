package receive

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedReaderThroughRouter: the userspace engine sends 20000
// packets at 50 kpps from the client through the router; the reader in
// the server's namespace reads every one, once, in order, with a
// one-way latency that is positive and small, and its nanoseconds.
func TestPrivilegedReaderThroughRouter(t *testing.T) {
	l := labdeploy.Example(t, "client-router-server.yaml", "r")
	run := labdeploy.Open(t, l)
	server, err := run.Link(spec.Endpoint{Node: "ns3", Interface: "veth2-peer"})
	if err != nil {
		t.Fatal(err)
	}
	router, err := run.Link(spec.Endpoint{Node: "ns2", Interface: "veth1-peer"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(run.Node("ns3").NS, Options{Ifindex: server.Attrs().Index, Port: 9, Nanoseconds: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	job := engine.Job{Sender: run.Node("ns1").NS, Interface: "veth1", Count: n, Frame: 64, RatePPS: 50000,
		DstIP: netip.MustParseAddr("10.0.2.1"), DstMAC: router.Attrs().HardwareAddr}
	res, err := (userspace.Engine{}).Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Stop(context.Background(), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	seq := got.Tracker.Sequence(engine.FirstSeq, map[int]uint64{0: res.Handed()})
	lat := got.Tracker.Latency("every packet", 1)
	t.Logf("sent %d; read %d, missed %d, bad %d; %+v; %+v", res.Sent, got.Read, got.Missed, got.Bad, *seq, *lat)
	if res.Sent != n || got.Read != n || got.Missed != 0 || seq.UniqueReceived != n || seq.Lost != 0 || seq.Duplicates != 0 || seq.Reordered != 0 {
		t.Fatalf("sent %d, read %d (missed %d): %+v", res.Sent, got.Read, got.Missed, *seq)
	}
	// Three veth hops on one host: well under 10 ms unless the machine
	// stalls a thread for that long, which this noisy one can, for a few.
	if lat.Samples != n || lat.MinNs <= 0 || lat.P50Ns > int64(2*time.Millisecond) || lat.MinNs%1000 == 0 && lat.MaxNs%1000 == 0 {
		t.Errorf("latency %+v", *lat)
	}
}
