package bench

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/labtest"
	"github.com/nslab/nslab/topology/labtest/labdeploy"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedXDPFastPath: the client-router-server lab with the
// router's XDP fast path. A UDP run as fast as the sender goes crosses it
// through XDP with every packet accounted for; the program's counters
// match the router's interfaces (forwarded + passed + dropped = every
// frame they took); a TCP flow crosses it; a ping with TTL 1 is the
// stack's (time exceeded comes back).
func TestPrivilegedXDPFastPath(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "    forwarding: true\n", "    forwarding: {ipv4: true, ipv6: true, fastpath: xdp}\n", 1)
	if src == string(data) {
		t.Fatal("the example changed: fix the edit")
	}
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("x")))
	r := labdeploy.Open(t, l)
	b := newBench(t, r, func(tr *spec.Traffic) { tr.Count, tr.Duration, tr.RatePPS, tr.Engine = 100000, 0, 0, "userspace" }, Options{Interval: 100 * time.Millisecond})
	rep, err := b.Run(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	rt := rep.Routers[0]
	in, out := rep.Hops[1], rep.Hops[2]
	t.Logf("%d pps; router %+v xdp %+v", int(rep.PPS), rt, rt.XDP)
	if rep.Sent != 100000 || rep.Unaccount != 0 || rt.XDP == nil {
		t.Fatalf("sent %d, unaccounted %d, XDP %+v", rep.Sent, rep.Unaccount, rt.XDP)
	}
	if x := rt.XDP; x.Forwarded < rep.Received-10 || x.Forwarded+x.Passed+x.Dropped != in.RxPackets+out.RxPackets || rt.ForwDatagrams > 10 {
		t.Errorf("XDP forwarded %d passed %d dropped %d, the router's interfaces took %d + %d, IP forwarded %d: want the run forwarded by XDP, and every frame counted once",
			x.Forwarded, x.Passed, x.Dropped, in.RxPackets, out.RxPackets, rt.ForwDatagrams)
	}
	tcp := newBench(t, r, func(tr *spec.Traffic) {
		tr.Count, tr.Duration, tr.TCP = 0, time.Second, &spec.TCP{Flows: 1}
	}, Options{Interval: 250 * time.Millisecond})
	trep, err := tcp.Run(context.Background(), 0)
	if err != nil || !trep.TCP.Drained || trep.TCP.Total.GoodputMbps <= 0 || trep.Routers[0].XDP == nil || trep.Routers[0].XDP.Forwarded == 0 {
		t.Fatalf("a TCP flow through XDP: %v, %+v", err, trep)
	}
	n, err := ns.Open(ns.DefaultDir, l.Namespace("ns1"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	res, err := echoTTL1(n, netip.MustParseAddr("10.0.2.1"))
	if err != nil || !strings.Contains(res, "time to live exceeded") {
		t.Errorf("a ping with TTL 1 through the router: %q, %v", res, err)
	}
}

// echoTTL1 pings dst once with TTL 1 from namespace n (iputils ping) and
// returns what it printed.
func echoTTL1(n *ns.NS, dst netip.Addr) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("ping", "-c", "1", "-t", "1", "-W", "2", dst.String())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := n.Start(cmd); err != nil {
		return "", err
	}
	_ = cmd.Wait() // ping exits 1 when no echo reply came: the point
	return strings.ToLower(out.String()), nil
}
