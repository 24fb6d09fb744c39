package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

// TestDuetSameScheduling: variants whose routers work in different kinds
// of context (the XDP fast path of a placed router in a napi kthread,
// the stack in RPS's softirq) are not measured as a duet, with the
// reason; variants alike in that are.
func TestDuetSameScheduling(t *testing.T) {
	data, err := os.ReadFile("../../examples/router-fastpaths.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Parse("router-fastpaths.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		variants []string
		want     string
	}{
		{[]string{"stack", "xdp"}, "variants stack and xdp run receive work in napi kthreads on different nodes (none against r1)"},
		{[]string{"xdp", "stack", "rps2"}, "(r1 against none)"},
		{[]string{"stack", "rps2", "gro"}, ""},
	} {
		req := &Request{Lab: l, Variants: c.variants, Duet: true}
		err := req.duetRefusal()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("variants %v: %v, want %q", c.variants, err, c.want)
		}
	}
}
