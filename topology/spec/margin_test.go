package spec

import (
	"strings"
	"testing"
)

// TestTrafficMargin: a traffic run's margin: is read as a fraction, and a
// margin that is no percentage between 0 and 100 is refused at its place.
func TestTrafficMargin(t *testing.T) {
	lab := func(margin string) string {
		return "name: m\nnodes:\n  a:\n    interfaces:\n      e0: {addresses: [10.0.0.1/24]}\n  b:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [a:e0, b:e0]\ntraffic:\n  - {name: t, from: a:e0, to: 10.0.0.2, duration: 1s, margin: " + margin + "}\n"
	}
	l, err := Parse("m.yaml", []byte(lab("2%")))
	if err != nil || l.Traffic[0].Margin != 0.02 {
		t.Fatalf("margin: 2%%: %v %v", err, l)
	}
	for _, bad := range []string{"0%", "150%", "lots"} {
		_, err := Parse("m.yaml", []byte(lab(bad)))
		if err == nil || !strings.Contains(err.Error(), "m.yaml:12:") || !strings.Contains(err.Error(), "a percentage above 0 and below 100") {
			t.Errorf("margin: %s: %v", bad, err)
		}
	}
}

// TestNearestOnly: a unique best match is suggested; among equals
// (ns4 against ns1, ns2, ns3) none is.
func TestNearestOnly(t *testing.T) {
	if got := NearestOnly("ruoter", []string{"client", "router", "server"}); got != "router" {
		t.Errorf("ruoter: %q", got)
	}
	if got := NearestOnly("ns4", []string{"ns1", "ns2", "ns3"}); got != "" {
		t.Errorf("ns4 among ns1..ns3: %q, want no guess", got)
	}
}
