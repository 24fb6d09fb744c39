package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

func deployCRS(t *testing.T) (*spec.Lab, *lab.Running) {
	t.Helper()
	l := labdeploy.Example(t, "client-router-server.yaml", "b")
	return l, labdeploy.Open(t, l)
}

// newBench opens a bench of the lab's "forward" run with the given
// changes, closed when the test ends.
func newBench(t *testing.T, r *lab.Running, edit func(*spec.Traffic), o Options) *Bench {
	t.Helper()
	tr := *r.Lab.TrafficRun("forward")
	edit(&tr)
	b, err := New(r, &tr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// TestPrivilegedBenchAccountsExactly: a count run at a rate the path holds
// reports received == sent, and every hop's numbers match the counters the
// test reads itself.
func TestPrivilegedBenchAccountsExactly(t *testing.T) {
	_, r := deployCRS(t)
	var live bytes.Buffer
	b := newBench(t, r, func(tr *spec.Traffic) { tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 20000, 50000, "userspace" },
		Options{Interval: 100 * time.Millisecond, Live: &live})
	rep := ownReadsAgree(t, b, r)
	if rep.Sent != 20000 || rep.Received != 20000 || rep.Loss != 0 || rep.Unaccount != 0 || rep.SenderCheck.Difference != 0 {
		t.Fatalf("sent %d received %d loss %d unaccounted %d sender check %+v", rep.Sent, rep.Received, rep.Loss, rep.Unaccount, rep.SenderCheck)
	}
	// Nothing dropped: the offered rate limited the run if the sender
	// kept it over the time its thread ran (a stalled CPU's time given
	// up, Result.Behind, is not the sender's), else the sender (a slow
	// machine, the VM under emulation, falls behind without stalling).
	want := "offered rate"
	if float64(rep.Sent)/(rep.Elapsed-rep.Result.Behind).Seconds() < 0.98*50000 {
		want = "sender"
	}
	if rep.Verdict.Limit != want || !strings.Contains(live.String(), "ns3:veth2-peer") {
		t.Errorf("verdict %q, want %s; live lines %q", rep.Bottleneck, want, live.String())
	}
	assertFormats(t, rep, "20000")
}

// assertFormats: every format carries the counts and the balance.
func assertFormats(t *testing.T, rep *report.Report, want string) {
	t.Helper()
	var out bytes.Buffer
	if err := report.Write(&out, "json", []*report.Report{rep}); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["bottleneck"] != rep.Bottleneck || back["unaccounted"].(float64) != float64(rep.Unaccount) {
		t.Errorf("json: %v %s", err, out.String())
	}
	for _, f := range []string{"table", "csv", "markdown"} {
		out.Reset()
		if err := report.Write(&out, f, []*report.Report{rep}); err != nil || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), rep.Bottleneck) {
			t.Errorf("%s: %v\n%s", f, err, out.String())
		}
	}
}

// ownReadsAgree runs the bench once to prime the path (ARP resolved), then
// reads every hop's counters itself around a second run: each must be the
// report's plus that run's one priming packet, drops equal.
func ownReadsAgree(t *testing.T, b *Bench, r *lab.Running) *report.Report {
	t.Helper()
	if _, err := b.measure(context.Background(), &spec.Traffic{Name: "warm", From: b.t.From, To: b.t.To, Count: 1, Engine: b.t.Engine}, 64); err != nil {
		t.Fatal(err)
	}
	own, err := sample.New(r.Opened, b.meas.targets)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := own.Read()
	rep, err := b.Run(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := own.Read()
	for i, h := range rep.Hops {
		d := after.Counters[i].Sub(before.Counters[i])
		want := h.Counters
		if account.IsOut(h.Role) {
			want.TxPackets++
		} else {
			want.RxPackets++
		}
		if d.TxPackets != want.TxPackets || d.RxPackets != want.RxPackets || d.TxDropped != want.TxDropped || d.RxDropped != want.RxDropped {
			t.Errorf("%s %s: report %+v, the test's own reads %+v (want the report's + the priming packet)", h.Role, h.Target, h.Counters, d)
		}
	}
	t.Logf("%s: sent %d received %d loss %d (%.2f%%) = named %d + unaccounted %d; %s", rep.Engine, rep.Sent, rep.Received, rep.Loss, rep.LossPct, rep.NamedDrops, rep.Unaccount, rep.Bottleneck)
	return rep
}

// TestPrivilegedLossIsNamed makes a lossy path on purpose: the router's
// ingress MTU is below the frames, so veth drops every frame on the first
// link and counts it as the sender's tx_dropped. The report must name
// every lost packet, and say why from what it measured.
func TestPrivilegedLossIsNamed(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("veth1-peer: {addresses: [10.0.1.254/24]}"), []byte("veth1-peer: {addresses: [10.0.1.254/24], mtu: 600}"), 1)
	l := labdeploy.Deploy(t, labtest.Rename(data, labtest.Name("b")))
	b := newBench(t, labdeploy.Open(t, l), func(tr *spec.Traffic) { tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 3000, 50000, "userspace" }, Options{})
	rep, err := b.Run(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 3000 || rep.Received != 0 || rep.Loss != 3000 || rep.NamedDrops != 3000 || rep.Unaccount != 0 || rep.Hops[0].TxDropped != 3000 {
		t.Fatalf("sent %d received %d loss %d named %d unaccounted %d (sender tx_dropped %d)",
			rep.Sent, rep.Received, rep.Loss, rep.NamedDrops, rep.Unaccount, rep.Hops[0].TxDropped)
	}
	if len(rep.Drops) != 1 || !strings.Contains(rep.Drops[0].Cause, "MTU 600") || rep.Verdict.Limit != "link" {
		t.Errorf("drops %+v, verdict %q", rep.Drops, rep.Bottleneck)
	}
}

// placedCRS deploys the client-router-server lab with the router's
// receive work on one CPU and the sender pinned to another.
func placedCRS(t *testing.T) (*lab.Running, int, int) {
	t.Helper()
	labtest.SkipUnlessRoot(t)
	online, err := host.Machine{}.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) < 2 {
		t.Skipf("placement needs 2 CPUs; this machine has %s", online)
	}
	sender, router := online[0], online[len(online)-1]
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "  ns2:\n    forwarding: true\n", "  ns2:\n    forwarding: true\n    cpus: ["+itoa(router)+"]\n", 1)
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("b")))
	if !l.Node("ns2").Placed() {
		t.Fatal("the example changed; fix the edit above")
	}
	return labdeploy.Open(t, l), sender, router
}

// TestPrivilegedRouterLimited provokes overload: the router's receive work
// is on another CPU than the pinned sender, and the sender runs at its top
// rate. The router cannot keep up: loss, every lost packet named, the
// verdict naming the router, and every hop number the test's own.
func TestPrivilegedRouterLimited(t *testing.T) {
	r, sender, router := placedCRS(t)
	overloadable(t)
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.RatePPS, tr.Engine, tr.CPUs = 2*time.Second, 0, 0, "userspace", spec.CPUSet{sender}
	}, Options{Interval: 200 * time.Millisecond})
	rep := ownReadsAgree(t, b, r)
	if rep.Unaccount != 0 || rep.SenderCheck.Difference != 0 {
		t.Fatalf("loss %d, unaccounted %d, sender check %+v: want every packet accounted for", rep.Loss, rep.Unaccount, rep.SenderCheck)
	}
	if rep.Loss <= 0 {
		t.Fatalf("premise failed: the sender at its top rate on cpu%d was to overload the router on cpu%d, and nothing was lost (%d pps forwarded)", sender, router, int(rep.PPS))
	}
	if rep.Verdict.Limit != "router" || rep.Verdict.Node != "ns2" || !strings.Contains(rep.Bottleneck, "backlog drops on cpu"+itoa(router)) {
		t.Errorf("verdict %+v (%s)", rep.Verdict, rep.Bottleneck)
	}
	for _, c := range rep.CPU {
		if c.N == router && !strings.Contains(strings.Join(c.Roles, ","), "router ns2") {
			t.Errorf("cpu%d is not labelled with the router: %v", router, c.Roles)
		}
	}
	assertFormats(t, rep, itoa(int(rep.NamedDrops)))
}

// TestPrivilegedPlacedRunHeld: with placement on, a rate the router holds
// still arrives whole.
func TestPrivilegedPlacedRunHeld(t *testing.T) {
	labtest.CoveredOnHost(t) // the userspace engine (or TCP): the same path as here
	r, sender, _ := placedCRS(t)
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.RatePPS, tr.Engine, tr.CPUs = 0, 20000, placedHeldRate, "userspace", spec.CPUSet{sender}
	}, Options{})
	rep := ownReadsAgree(t, b, r)
	if rep.Sent != 20000 || rep.Received != 20000 || rep.Unaccount != 0 {
		t.Fatalf("sent %d received %d unaccounted %d", rep.Sent, rep.Received, rep.Unaccount)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestPrivilegedRateShaping benches through a router whose egress is
// limited to 20 Mbit/s (tbf): the receiver gets within 5% of 20 Mbit/s,
// the packets over the rate are named as the impairment's qdisc drops, the
// balance holds, and the verdict names the link.
func TestPrivilegedRateShaping(t *testing.T) {
	labtest.CoveredOnHost(t) // the userspace engine (or TCP): the same path as here
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "veth2: {addresses: [10.0.2.254/24]}", "veth2: {addresses: [10.0.2.254/24], impair: {rate: 20Mbit}}", 1)
	if src == string(data) {
		t.Fatal("the example changed: fix the edit")
	}
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("b")))
	r := labdeploy.Open(t, l)
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.RatePPS, tr.RateMbps, tr.Engine = 3*time.Second, 0, 0, 0, "userspace"
	}, Options{Interval: 500 * time.Millisecond})
	rep, err := b.Run(context.Background(), 1518)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: sent %d in %v, received %d in %v: %.2f Mb/s L2 (steady %.2f); qdisc drops %+v; %s",
		rep.Engine, rep.Sent, rep.Elapsed, rep.Received, rep.ReceiveWindow, rep.MbpsL2, rep.SteadyL2, rep.Drops, rep.Bottleneck)
	if rep.MbpsL2 < 19 || rep.MbpsL2 > 21 || rep.SteadyL2 < 19 || rep.SteadyL2 > 21 {
		t.Errorf("delivered %.2f Mb/s (steady %.2f) through a 20 Mbit/s link; want within 5%%", rep.MbpsL2, rep.SteadyL2)
	}
	if rep.Loss <= 0 || rep.Unaccount != 0 || len(rep.Drops) != 1 || rep.Drops[0].Place != "qdisc of ns2:veth2" {
		t.Fatalf("loss %d unaccounted %d drops %+v: want every lost packet named at ns2:veth2's qdisc", rep.Loss, rep.Unaccount, rep.Drops)
	}
	if rep.Verdict.Limit != "link" || rep.Verdict.Node != "ns2:veth2" || !strings.Contains(rep.Bottleneck, "offered more than 20Mbit") {
		t.Errorf("verdict %q", rep.Bottleneck)
	}
	if rep.Env.Impairments["ns2:veth2"] != "tbf rate 20Mbit limit 1000" {
		t.Errorf("environment impairments %v", rep.Env.Impairments)
	}
}

// TestPrivilegedSenderShaped: 4,000 frames of 64 bytes (240 kB) sent
// into a 2 Mbit/s tbf on the sender's own interface, whose queue holds
// 1000 full-size frames (1.5 MB): the queue takes them all and lets them
// out at its rate for about a second, so nothing is lost and the rate was
// the shaper's. The verdict names that shaper, with its queue's depth,
// not the sender. (2 Mbit/s: even the VM's emulated sender offers more.)
func TestPrivilegedSenderShaped(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "veth1: {addresses: [10.0.1.1/24]}", "veth1: {addresses: [10.0.1.1/24], impair: {rate: 2Mbit}}", 1)
	if src == string(data) {
		t.Fatal("the example changed: fix the edit")
	}
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("b")))
	r := labdeploy.Open(t, l)
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.RatePPS, tr.RateMbps, tr.Engine = 0, 4000, 0, 0, "userspace"
	}, Options{Interval: 100 * time.Millisecond})
	rep, err := b.Run(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d received %d: %.2f Mb/s L2; drops %+v; %s", rep.Sent, rep.Received, rep.MbpsL2, rep.Drops, rep.Bottleneck)
	if rep.Loss != 0 || rep.Unaccount != 0 {
		t.Fatalf("loss %d unaccounted %d drops %+v: a shaper on the sender's interface should hold it back, not drop", rep.Loss, rep.Unaccount, rep.Drops)
	}
	if rep.Verdict.Limit != "shaper" || rep.Verdict.Node != "ns1:veth1" || !strings.Contains(rep.Bottleneck, "tbf rate 2Mbit") || !strings.Contains(rep.Bottleneck, "its queue held up to") || strings.Contains(rep.Bottleneck, "up to 0 packets") {
		t.Errorf("verdict %q, want the shaper ns1:veth1 with its queue", rep.Bottleneck)
	}
}

// TestPrivilegedCopiesNamed: an impairment that duplicates (netem, so the
// VM runs it) sends copies that reach the receiver; the report names them
// as added where they were made, at the router's egress or at the sender,
// counts the engine's packets as sent, and balances.
func TestPrivilegedCopiesNamed(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if err := qdisc.Check("netem"); err != nil {
		t.Skipf("needs netem: %v", err)
	}
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []struct{ iface, old string }{
		{"ns2:veth2", "veth2: {addresses: [10.0.2.254/24]}"},
		{"ns1:veth1", "veth1: {addresses: [10.0.1.1/24]}"},
	} {
		edited := bytes.Replace(data, []byte(at.old), []byte(strings.TrimSuffix(at.old, "}")+", impair: {duplicate: 20%}}"), 1)
		if bytes.Equal(edited, data) {
			t.Fatal("the example changed; fix the edit above")
		}
		l := labdeploy.Deploy(t, labtest.Rename(edited, labtest.Name("b")))
		b := newBench(t, labdeploy.Open(t, l), func(tr *spec.Traffic) { tr.Duration, tr.Count, tr.RatePPS = 0, 5000, 10000 }, Options{})
		rep, err := b.Run(context.Background(), 64)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Sent != 5000 || rep.Received <= 5000 || rep.Unaccount != 0 || len(rep.Added) != 1 || rep.Added[0].Place != "impairment of "+at.iface ||
			rep.Sent+rep.NamedAdded != rep.Received+rep.NamedDrops {
			t.Errorf("duplicates at %s: sent %d received %d added %+v drops %d unaccounted %d (%s)", at.iface, rep.Sent, rep.Received, rep.Added, rep.NamedDrops, rep.Unaccount, rep.Bottleneck)
		}
	}
}
