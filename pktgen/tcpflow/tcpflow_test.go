package tcpflow

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
)

// TestPrivilegedFlows runs two reno flows for a second through the
// client-router-server lab: each delivers everything it wrote (the sink
// read what the sender's TCP_INFO says was acked, and the receiver's
// says was received), both ends' TCP_INFO
// is read, and the sender was sampled over the run; the sink's
// connections took the job's busy polling from the listener.
func TestPrivilegedFlows(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	l := labdeploy.Example(t, "client-router-server.yaml", "t")
	r := labdeploy.Open(t, l)
	res, err := Run(context.Background(), Job{Sender: r.Node("ns1").NS, Receiver: r.Node("ns3").NS, Dst: netip.MustParseAddr("10.0.2.1"),
		Flows: 2, CC: "reno", Duration: time.Second, Interval: 200 * time.Millisecond, BusyPoll: 50 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Drained || len(res.Flows) != 2 {
		t.Fatalf("drained %v, %d flows", res.Drained, len(res.Flows))
	}
	if res.BusyPoll != 50*time.Microsecond {
		t.Errorf("the sink's connections busy-poll %v, want the job's 50µs", res.BusyPoll)
	}
	for i, f := range res.Flows {
		t.Logf("flow %d: port %d received %d in %v, sender %+v, receiver %+v, %d points", i, f.Port, f.Received, f.Last, f.Sender, f.Receiver, len(f.Points))
		// TCP_INFO counts sequence numbers: the sender's acked bytes hold
		// its SYN and its FIN, the receiver's received bytes the FIN.
		if f.Received == 0 || f.Received+2 != f.Sender.BytesAcked || f.Received+1 != f.Receiver.BytesRecv {
			t.Errorf("flow %d: sink read %d, sender acked %d, receiver's TCP_INFO received %d: want the same, and more than 0", i, f.Received, f.Sender.BytesAcked, f.Receiver.BytesRecv)
		}
		if len(f.Points) < 3 || f.Sender.MinRTT <= 0 || f.Sender.DataSegsOut == 0 || f.Receiver.DataSegsIn == 0 {
			t.Errorf("flow %d: %d points, min RTT %v, data segments out %d in %d", i, len(f.Points), f.Sender.MinRTT, f.Sender.DataSegsOut, f.Receiver.DataSegsIn)
		}
	}
	_, err = Run(context.Background(), Job{Sender: r.Node("ns1").NS, Receiver: r.Node("ns3").NS, Dst: netip.MustParseAddr("10.0.2.1"), CC: "nosuch", Duration: time.Second})
	if err == nil {
		t.Error("congestion control nosuch was taken")
	}
}
