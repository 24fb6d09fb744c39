//go:build vmtest

package bench

import (
	"bytes"
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// impairedCRS deploys the client-router-server lab with the router's
// egress impaired as impair says (netem: the VM's kernel has it).
func impairedCRS(t *testing.T, impair string) *lab.Running {
	t.Helper()
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old := "veth2: {addresses: [10.0.2.254/24]}"
	edited := bytes.Replace(data, []byte(old), []byte("veth2: {addresses: [10.0.2.254/24], impair: "+impair+"}"), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the example changed; fix the edit above")
	}
	l := labdeploy.Deploy(t, labtest.Rename(edited, labtest.Name("b")))
	return labdeploy.Open(t, l)
}

// TestVMLatencyNetemDelay: 20 ms of netem delay on the router's egress;
// with either engine, the median one-way latency is 20 to 22 ms (the rest
// of the path adds well under 2 ms at 1000 pps, even emulated).
func TestVMLatencyNetemDelay(t *testing.T) {
	for _, eng := range []string{"pktgen", "userspace"} {
		r := impairedCRS(t, "{delay: 20ms}")
		b := newBench(t, r, func(tr *spec.Traffic) { tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 2000, 1000, eng }, Options{Latency: true})
		rep, err := b.Run(context.Background(), 64)
		if err != nil {
			t.Fatal(err)
		}
		l := rep.Latency
		t.Logf("%s: latency %+v; sequence %+v", rep.Engine, *l, rep.Sequence)
		if l.Samples != 2000 || l.P50Ns < int64(20*time.Millisecond) || l.P50Ns > int64(22*time.Millisecond) {
			t.Errorf("%s: %d samples, median %v; want 2000, 20..22 ms", rep.Engine, l.Samples, time.Duration(l.P50Ns))
		}
		want := int64(1)
		if eng == "pktgen" {
			want = 1000
		}
		if l.ResolutionNs != want {
			t.Errorf("%s: stamps to %d ns, want %d", rep.Engine, l.ResolutionNs, want)
		}
		// The fidelity line shows the delivered distribution against the 20 ms asked.
		if f := rep.Fidelity; len(f) != 1 || len(f[0].Checks) != 1 || f[0].Checks[0].What != "delay" || !f[0].Checks[0].OK || !strings.Contains(f[0].Checks[0].Delivered, "p50 ") {
			t.Errorf("%s: fidelity %+v", rep.Engine, f)
		}
	}
}

// TestVMNetemDuplicateReorder: netem told to duplicate 5% and to send 25%
// at once while it delays the rest by 10 ms. At 150 pps (6.7 ms apart) a
// packet sent at once overtakes only the one before it, which arrives
// late (reordered, RFC 4737) when it was delayed: 25% x 75% of the
// packets. Each count lies within 5 standard deviations of its binomial
// mean, and the duplicates are the copies the counters name as added.
func TestVMNetemDuplicateReorder(t *testing.T) {
	r := impairedCRS(t, "{delay: 10ms, duplicate: 5%, reorder: 25%}")
	const n = 2000
	b := newBench(t, r, func(tr *spec.Traffic) { tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, n, 150, "userspace" }, Options{Latency: true})
	rep, err := b.Run(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Sequence
	t.Logf("sequence %+v; added %+v", *s, rep.Added)
	within := func(what string, got uint64, p float64) {
		mean, sd := n*p, math.Sqrt(n*p*(1-p))
		if float64(got) < mean-5*sd || float64(got) > mean+5*sd {
			t.Errorf("%s: %d, want %.0f within 5 sd (%.1f)", what, got, mean, sd)
		}
	}
	within("duplicates", s.Duplicates, 0.05)
	within("reordered", s.Reordered, 0.25*0.75)
	if s.UniqueReceived != n || s.Lost != 0 || s.Duplicates != rep.NamedAdded {
		t.Errorf("unique %d lost %d, duplicates %d against %d named as added", s.UniqueReceived, s.Lost, s.Duplicates, rep.NamedAdded)
	}
}

// TestVMIMIXPktgen: kernel pktgen's imix_weights send the 7:4:1 mix; the
// reader counts each size within 5 standard deviations of its share, give
// or take one percent: pktgen draws each frame's size from a table of 100
// entries (IMIX_PRECISION), so a share is whole percents, 8.33% a 1518's
// 8 or 9 entries.
func TestVMIMIXPktgen(t *testing.T) {
	_, r := deployCRS(t)
	const n = 12000
	b := newBench(t, r, func(tr *spec.Traffic) {
		tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, n, 10000, "pktgen"
		tr.Mix, tr.Frames = append(spec.Mix(nil), spec.SimpleIMIX...), []int{1518}
	}, Options{Latency: true})
	rep, err := b.Run(context.Background(), 1518)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: received %d of %d, sizes %v", rep.Engine, rep.Received, rep.Sent, rep.ReceivedSizes)
	for _, p := range spec.SimpleIMIX {
		share := float64(p.Weight) / 12
		got, mean, sd := float64(rep.ReceivedSizes[p.Size]), n*share, math.Sqrt(n*share*(1-share))
		if slack := 5*sd + 0.01*n; rep.Received != n || got < mean-slack || got > mean+slack {
			t.Errorf("%d-byte frames: %.0f of %d received, want %.0f within 5 sd (%.0f) and pktgen's 1%% table step", p.Size, got, rep.Received, mean, sd)
		}
	}
}
