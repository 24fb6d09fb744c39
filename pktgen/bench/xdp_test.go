package bench

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// TestPrivilegedXDPFastPath: the client-router-server lab with the
// router's XDP fast path. A UDP run as fast as the sender goes crosses it
// through XDP with every packet accounted for; the program's counters
// match the router's interfaces (forwarded + passed + dropped = every
// frame they took); a TCP flow crosses it; a ping with TTL 1 is the
// stack's (time exceeded comes back).
func TestPrivilegedXDPFastPath(t *testing.T) {
	labtest.CoveredOnHost(t) // the userspace engine (or TCP): the same path as here
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
	b.Close() // its sink holds the run's port
	// The live-frame engine: its frames' pages come back as the router's
	// program left them (MACs rewritten, TTL one less); every frame must
	// still leave with the template's headers, so none reaches TTL 1.
	live := newBench(t, r, func(tr *spec.Traffic) { tr.Count, tr.Duration, tr.RatePPS, tr.Engine = 200000, 0, 0, "xdp" }, Options{Interval: 100 * time.Millisecond})
	lrep, err := live.Run(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case lrep.Engine != userspace.XDPName && errors.Is(ns1Probe(t, l), userspace.ErrLiveFramesRefused):
		// The engine fell back, as it must where the kernel refuses:
		// the live-frame part cannot run on this machine.
		t.Logf("the live-frame part did not run: %s", lrep.Reason)
	case lrep.Engine != userspace.XDPName:
		t.Errorf("engine xdp ran %s (%s) where the kernel runs live frames", lrep.Engine, lrep.Reason)
	}
	if x := lrep.Routers[0].XDP; x == nil || x.Passed != 0 || x.Forwarded != lrep.Received || lrep.Unaccount != 0 {
		t.Errorf("live frames through the XDP router: %+v, received %d, unaccounted %d: want all forwarded, none passed (TTL 1)", x, lrep.Received, lrep.Unaccount)
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
	typ, from, err := ttl1(n, netip.MustParseAddr("10.0.2.1"))
	if err != nil || typ != 11 || from != netip.MustParseAddr("10.0.1.254") {
		t.Errorf("a datagram with TTL 1 through the router: ICMP type %d from %v (%v), want time exceeded (11) from the router", typ, from, err)
	}
}

// ttl1 sends one UDP datagram with TTL 1 from namespace n to dst and
// reads the ICMP error it brings back from the socket's error queue
// (IP_RECVERR): its type and the address of the node that sent it.
func ttl1(n *ns.NS, dst netip.Addr) (icmpType uint8, from netip.Addr, err error) {
	err = n.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TTL, 1); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVERR, 1); err != nil {
			return err
		}
		if err := unix.Sendto(fd, []byte("ttl"), 0, &unix.SockaddrInet4{Port: 9, Addr: dst.As4()}); err != nil {
			return err
		}
		buf, oob := make([]byte, 64), make([]byte, 512)
		for range 100 {
			_, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if errors.Is(err, unix.EAGAIN) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if err != nil {
				return err
			}
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				return err
			}
			for _, m := range msgs {
				if m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR && len(m.Data) >= 24 {
					icmpType = m.Data[5]                           // struct sock_extended_err: ee_type
					from = netip.AddrFrom4([4]byte(m.Data[20:24])) // the offender's sockaddr_in after it
				}
			}
			return nil
		}
		return errors.New("no ICMP error came back in 2 s")
	})
	return icmpType, from, err
}

// ns1Probe is the live-frame probe's finding in the lab's ns1.
func ns1Probe(t *testing.T, l *spec.Lab) error {
	t.Helper()
	n, err := ns.Open(ns.DefaultDir, l.Namespace("ns1"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	return n.Do(userspace.ProbeLiveFrames)
}
