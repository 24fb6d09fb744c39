package bench

import (
	"math"
	"testing"

	"github.com/nslab/nslab/pktgen/softirq"
	"github.com/nslab/nslab/topology/spec"
)

// TestRelativeCost: the routers' cost per packet over the receiver's on
// the CPUs that did the routers' packets; none when the receiver worked
// mostly elsewhere.
func TestRelativeCost(t *testing.T) {
	cases := []struct {
		name             string
		router, receiver []softirq.DevTime
		relative, share  float64
	}{
		{"same CPU", []softirq.DevTime{{}, {Ns: 2000, Packets: 10}}, []softirq.DevTime{{}, {Ns: 1000, Packets: 10}}, 2, 1},
		// The receiver's packets on CPU 0 are left out: the yardstick is
		// the router's CPU's.
		{"part elsewhere", []softirq.DevTime{{}, {Ns: 3000, Packets: 10}}, []softirq.DevTime{{Ns: 9000, Packets: 4}, {Ns: 1500, Packets: 6}}, 1.2, 0.6},
		{"mostly elsewhere", []softirq.DevTime{{}, {Ns: 3000, Packets: 10}}, []softirq.DevTime{{Ns: 9000, Packets: 6}, {Ns: 1500, Packets: 4}}, 0, 0.4},
		// A CPU with under 1% of the routers' packets does not count.
		{"a stray packet", []softirq.DevTime{{Ns: 5000, Packets: 1}, {Ns: 2000, Packets: 200}}, []softirq.DevTime{{Ns: 100, Packets: 1}, {Ns: 2000, Packets: 199}}, (2000.0 / 200) / (2000.0 / 199), 0.995},
		{"nothing received", []softirq.DevTime{{}, {Ns: 3000, Packets: 10}}, []softirq.DevTime{{}, {}}, 0, 0},
	}
	for _, c := range cases {
		rel, share := relativeCost(c.router, c.receiver)
		if math.Abs(rel-c.relative) > 1e-9 || math.Abs(share-c.share) > 1e-9 {
			t.Errorf("%s: relative %v share %v, want %v %v", c.name, rel, share, c.relative, c.share)
		}
	}
}

// TestChangesReceiver: the relative cost is no yardstick when a variant
// changes the node that receives (or runs command lines there).
func TestChangesReceiver(t *testing.T) {
	l, err := spec.Parse("x.yaml", []byte(`name: t
nodes:
  a: {interfaces: {e0: {addresses: [10.0.1.1/24]}}}
  r: {forwarding: true, interfaces: {e0: {addresses: [10.0.1.254/24]}, e1: {addresses: [10.0.2.254/24]}}}
  b: {interfaces: {e0: {addresses: [10.0.2.1/24]}}, routes: [{to: default, via: 10.0.2.254}]}
links:
  - endpoints: [a:e0, r:e0]
  - endpoints: [r:e1, b:e0]
traffic:
  - {name: x, from: a:e0, to: 10.0.2.1, rate: 1kpps, duration: 1s}
variants:
  router: {r: {sysctls: {net.ipv4.conf.all.rp_filter: 0}}}
  receiver: {b: {sysctls: {net.ipv4.conf.all.rp_filter: 0}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for variants, want := range map[[2]string]bool{
		{"base", "router"}:     false,
		{"base", "receiver"}:   true,
		{"router", "receiver"}: true,
	} {
		req := Request{Lab: l, Traffic: l.TrafficRun("x"), Variants: variants[:]}
		if got := req.changesReceiver(); got != want {
			t.Errorf("variants %v: changesReceiver %v, want %v", variants, got, want)
		}
	}
	req := Request{Lab: l, Traffic: &spec.Traffic{To: l.TrafficRun("x").To.Next()}, Variants: []string{"base", "router"}}
	if !req.changesReceiver() {
		t.Error("a destination no node holds: changesReceiver false")
	}
}
