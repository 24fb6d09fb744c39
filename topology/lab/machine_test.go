package lab

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/labtest"
)

// TestPrivilegedMachineSysctls: a lab's machine-wide sysctl is set while
// it is deployed and given its old value back at destroy, and after a
// deploy that fails at any step; a second lab may not set the same key.
func TestPrivilegedMachineSysctls(t *testing.T) {
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
