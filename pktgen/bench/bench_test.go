package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/labtest"
	"github.com/nslab/nslab/topology/labtest/labdeploy"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/sample"
	"github.com/nslab/nslab/topology/spec"
)

func deployCRS(t *testing.T) *spec.Lab {
	t.Helper()
	return labdeploy.Example(t, "client-router-server.yaml", "b")
}

// TestPrivilegedBenchAccountsExactly: a count run at a rate the path holds
// reports received == sent, and every hop's numbers match the counters the
// test reads itself (which also see bench's priming packet and the
// router's ARP request for the server).
func TestPrivilegedBenchAccountsExactly(t *testing.T) {
	l := deployCRS(t)
	var live bytes.Buffer
	rep := accountsExactly(t, l, "userspace", 50000, &live)
	if rep.Engine == "" || rep.NextHopMAC == "" || !strings.Contains(live.String(), "ns3:veth2-peer") {
		t.Errorf("report %+v; live lines %q", rep, live.String())
	}
	var out bytes.Buffer
	if err := Write(&out, "json", []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["received"].(float64) != 20000 {
		t.Errorf("json: %v %s", err, out.String())
	}
	for _, f := range []string{"table", "csv", "markdown"} {
		out.Reset()
		if err := Write(&out, f, []*Report{rep}); err != nil || !strings.Contains(out.String(), "20000") {
			t.Errorf("%s: %v\n%s", f, err, out.String())
		}
	}
}

// accountsExactly runs 20000 packets with an engine at a rate the path
// holds and checks received == sent, and that every hop's numbers match
// the counters the test reads itself (which also see bench's priming
// packet and the router's ARP request for the server).
func accountsExactly(t *testing.T, l *spec.Lab, engineName string, pps uint64, live *bytes.Buffer) *Report {
	t.Helper()
	tr := *l.TrafficRun("forward")
	tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 20000, pps, engineName
	path, _ := l.PathOf(tr.From, tr.To)
	own, err := sample.New(ns.DefaultDir, targets(l, path))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	before, _ := own.Read()
	o := Options{Interval: 100 * time.Millisecond}
	if live != nil {
		o.Live = live
	}
	rep, err := Run(context.Background(), l, &tr, 64, o)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := own.Read()
	t.Logf("%s: sent %d received %d, %.0f pps", rep.Engine, rep.Sent, rep.Received, rep.PPS)
	if rep.Sent != 20000 || rep.Received != 20000 || rep.Loss != 0 || rep.Unaccount != 0 {
		t.Fatalf("sent %d received %d loss %d unaccounted %d", rep.Sent, rep.Received, rep.Loss, rep.Unaccount)
	}
	// sender tx, router ingress rx, router egress tx, server rx
	extra := []uint64{1, 1, 2, 2}
	for i, h := range rep.Hops {
		d := after.Counters[i].Sub(before.Counters[i])
		got, own := h.TxPackets, d.TxPackets
		if h.Role == "ingress" || h.Role == "receiver" {
			got, own = h.RxPackets, d.RxPackets
		}
		if got+extra[i] != own {
			t.Errorf("%s %s: report %d, counters read by the test %d (want report + %d)", h.Role, h.Target, got, own, extra[i])
		}
	}
	return rep
}

// TestPrivilegedLossIsNamed makes a lossy path on purpose: the router's
// ingress MTU is below the frames, so veth drops every frame on the first
// link and counts it as the sender's tx_dropped. The report must name
// every lost packet.
func TestPrivilegedLossIsNamed(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("veth1-peer: {addresses: [10.0.1.254/24]}"), []byte("veth1-peer: {addresses: [10.0.1.254/24], mtu: 600}"), 1)
	l := labdeploy.Deploy(t, labtest.Rename(data, labtest.Name("b")))
	tr := *l.TrafficRun("forward")
	tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 3000, 50000, "userspace"
	rep, err := Run(context.Background(), l, &tr, 1000, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 3000 || rep.Received != 0 || rep.Loss != 3000 || rep.NamedDrops != 3000 || rep.Unaccount != 0 || rep.Hops[0].TxDropped != 3000 {
		t.Fatalf("sent %d received %d loss %d named %d unaccounted %d (sender tx_dropped %d)",
			rep.Sent, rep.Received, rep.Loss, rep.NamedDrops, rep.Unaccount, rep.Hops[0].TxDropped)
	}
}
