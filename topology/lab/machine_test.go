package lab

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedMachineSysctls: a lab's machine-wide sysctl is set while
// it is deployed and given its old value back at destroy, and after a
// deploy that fails at any step; a second lab may not set the same key.
func TestPrivilegedMachineSysctls(t *testing.T) {
	labtest.CoveredOnHost(t)
	labtest.SkipUnlessRoot(t)
	const key = "/proc/sys/net/core/netdev_budget"
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(key)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	before := read()
	n, _ := strconv.Atoi(before)
	want := strconv.Itoa(n + 7)
	t.Cleanup(func() { _ = os.WriteFile(key, []byte(before), 0o644) }) // whatever the test left
	src := "name: m\nmachine:\n  sysctls: {net.core.netdev_budget: " + want + "}\nnodes:\n  a:\n    interfaces:\n      e0: {addresses: [10.9.0.1/24]}\n  b:\n    interfaces:\n      e0: {addresses: [10.9.0.2/24]}\nlinks:\n  - endpoints: [a:e0, b:e0]\n"
	f := newFixture(t, src)
	f.failEachStep(func() {
		if got := read(); got != before {
			t.Errorf("after a failed deploy: netdev_budget %s, want %s back", got, before)
		}
	})
	f.deploy()
	if got := read(); got != want {
		t.Fatalf("deployed: netdev_budget %s, want %s", got, want)
	}
	g := newFixture(t, src)
	g.m = f.m // the same state directory: the other lab is seen
	if _, err := g.m.Deploy(t.Context(), g.lab); err == nil || !strings.Contains(err.Error(), "one lab at a time may set a machine-wide key") {
		t.Errorf("a second lab setting netdev_budget: %v", err)
	}
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != before {
		t.Errorf("destroyed: netdev_budget %s, want %s back", got, before)
	}
}

// TestPrivilegedMachineVariant: a variant changes a machine-wide key the
// lab sets and sets one the lab does not; undoing it gives both their
// values back, and destroy with the variant applied leaves the machine
// as it found it.
func TestPrivilegedMachineVariant(t *testing.T) {
	labtest.CoveredOnHost(t)
	labtest.SkipUnlessRoot(t)
	keys := []string{"/proc/sys/net/core/netdev_budget", "/proc/sys/net/core/dev_weight"}
	read := func() []int {
		t.Helper()
		var out []int
		for _, k := range keys {
			b, err := os.ReadFile(k)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			out = append(out, v)
		}
		return out
	}
	before := read()
	t.Cleanup(func() {
		for i, k := range keys {
			_ = os.WriteFile(k, []byte(strconv.Itoa(before[i])), 0o644) // whatever the test left
		}
	})
	budget, variantBudget, weight := before[0]+7, before[0]+9, before[1]+5
	src := fmt.Sprintf("name: m\nmachine:\n  sysctls: {net.core.netdev_budget: %d}\nnodes:\n  a:\n    interfaces:\n      e0: {addresses: [10.9.0.1/24]}\n  b:\n    interfaces:\n      e0: {addresses: [10.9.0.2/24]}\nlinks:\n  - endpoints: [a:e0, b:e0]\nvariants:\n  busy:\n    machine:\n      sysctls: {net.core.netdev_budget: %d, net.core.dev_weight: %d}\n", budget, variantBudget, weight)
	f := newFixture(t, src)
	f.deploy()
	for _, c := range []struct {
		variant string
		want    []int
	}{{"busy", []int{variantBudget, weight}}, {spec.BaseVariant, []int{budget, before[1]}}, {"busy", []int{variantBudget, weight}}} {
		if err := f.m.ApplyVariant(t.Context(), f.lab, c.variant); err != nil {
			t.Fatal(err)
		}
		if got := read(); !slices.Equal(got, c.want) {
			t.Errorf("variant %s: netdev_budget, dev_weight %v, want %v", c.variant, got, c.want)
		}
	}
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	if got := read(); !slices.Equal(got, before) {
		t.Errorf("destroyed with the variant applied: %v, want %v back", got, before)
	}
}
