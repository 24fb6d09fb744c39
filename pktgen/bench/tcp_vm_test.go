//go:build vmtest

package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// TestVMBufferbloat: 4 TCP flows through a 5 Mbit/s link (the router's
// egress, tbf) behind a FIFO of 1000 packets, then, as the variant codel,
// behind fq_codel (the VM's kernel has it). The probe's p99 one-way
// latency under load is at least 5x lower with fq_codel, and the goodput
// within 10% of the FIFO's.
func TestVMBufferbloat(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "veth2: {addresses: [10.0.2.254/24]}", "veth2: {addresses: [10.0.2.254/24], impair: {rate: 5Mbit}, qdisc: {kind: pfifo, limit: 1000}}", 1)
	src += "variants:\n  codel:\n    ns2:\n      interfaces:\n        veth2: {qdisc: fq_codel}\n"
	l, err := spec.Parse("bb.yaml", labtest.Rename([]byte(src), labtest.Name("b")))
	if err != nil {
		t.Fatal(err)
	}
	m := &lab.Manager{StateDir: t.TempDir()}
	ctx := context.Background()
	if _, err := m.Deploy(ctx, l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := m.Destroy(l.Name); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	r, err := m.Open(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	reps := map[string]*report.Report{}
	for _, name := range []string{"base", "codel"} {
		if err := m.ApplyVariant(ctx, l, name); err != nil {
			t.Fatal(err)
		}
		tr := *l.TrafficRun("forward")
		tr.Duration, tr.Count, tr.TCP = 4*time.Second, 0, &spec.TCP{Flows: 4, CC: "cubic"}
		b, err := New(r.As(l.Variant(name).Lab), &tr, Options{Interval: 500 * time.Millisecond, Variant: name})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := b.Run(ctx, 0)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: goodput %.2f Mbit/s; %s; %s", name, rep.TCP.Total.GoodputMbps, rep.TCP.Latency.Line(), rep.Env.Impairments["ns2:veth2"])
		reps[name] = rep
	}
	if err := m.ApplyVariant(ctx, l, "base"); err != nil {
		t.Fatal(err)
	}
	fifo, codel := reps["base"].TCP, reps["codel"].TCP
	if fifo.Latency.Loaded.P99Ns < 5*codel.Latency.Loaded.P99Ns {
		t.Errorf("p99 under load: FIFO %v, fq_codel %v: want fq_codel at least 5x lower", time.Duration(fifo.Latency.Loaded.P99Ns), time.Duration(codel.Latency.Loaded.P99Ns))
	}
	if g, h := fifo.Total.GoodputMbps, codel.Total.GoodputMbps; h < 0.9*g || h > 1.1*g {
		t.Errorf("goodput: FIFO %.2f Mbit/s, fq_codel %.2f: want within 10%%", g, h)
	}
	if !strings.Contains(reps["codel"].Env.Impairments["ns2:veth2"], "queue fq_codel") {
		t.Errorf("the variant's queue: %q", reps["codel"].Env.Impairments["ns2:veth2"])
	}
}

// TestVMTCPDelayFidelity: a TCP run through 20 ms of netem delay: the
// fidelity line checks the delay with the latency probe alone (the flows'
// queueing would add to it), and finds what was asked.
func TestVMTCPDelayFidelity(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "veth2: {addresses: [10.0.2.254/24]}", "veth2: {addresses: [10.0.2.254/24], impair: {delay: 20ms}}", 1)
	l := labdeploy.Deploy(t, labtest.Rename([]byte(src), labtest.Name("d")))
	r := labdeploy.Open(t, l)
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.TCP = 2*time.Second, 0, &spec.TCP{Flows: 1}
	}, Options{Interval: 500 * time.Millisecond})
	rep, err := b.Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Fidelity
	if len(f) != 1 || len(f[0].Checks) != 1 || f[0].Checks[0].What != "delay" || !f[0].Checks[0].OK || !strings.Contains(f[0].Checks[0].Delivered, "latency probe alone") {
		t.Fatalf("fidelity %+v", f)
	}
	t.Logf("%s: %s", f[0].Interface, f[0].Checks[0].Delivered)
}
