package lab

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/cgroup"
	"github.com/nslab/nslab/topology/lab/inspect"
)

// limitsLab is pairYAML with a busy loop held to 20% of a CPU in ns1, and
// in ns2 a program that takes more memory than its limit and one that
// starts more processes than its limit, 2 s after it: a program past the
// pids limit first leaves the other none to fork its pipe with (seen in
// CI: no OOM kill, 19 of 20 pids taken).
func limitsLab() string {
	s := strings.Replace(pairYAML, "  ns1:\n", "  ns1:\n    limits: {cpu: 20%}\n    run: [\"while :; do :; done\"]\n", 1)
	return strings.Replace(s, "  ns2:\n", `  ns2:
    limits: {memory: 32MiB, pids: 20}
    run:
      - "sleep 1; x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived; sleep 1000"
      - "sleep 3; for i in $(seq 40); do sleep 1000 & done; wait"
`, 1)
}

// TestPrivilegedLimits: a node limited to 20% of a CPU runs a busy loop
// held to 20% ± 3% (its cgroup's CPU time over 3 s), a program past its
// node's memory limit is killed and inspect counts it, a fork past the
// pids limit is refused, and destroy removes the cgroups.
func TestPrivilegedLimits(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, limitsLab())
	if _, err := cgroup.Find(); err != nil {
		t.Skipf("no cgroups for limits here: %v", err)
	}
	f.deploy()
	limits := func() map[string]*inspect.LimitsInfo {
		t.Helper()
		info, err := f.m.Store().Inspect(f.lab.Name)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*inspect.LimitsInfo{}
		for _, n := range info.Nodes {
			if n.Limits == nil || n.Limits.Error != "" {
				t.Fatalf("node %s: limits %+v", n.Node, n.Limits)
			}
			out[n.Node] = n.Limits
		}
		return out
	}
	l0, t0 := limits(), time.Now()
	time.Sleep(3 * time.Second)
	l1, t1 := limits(), time.Now()
	share := (l1["ns1"].CPUSeconds - l0["ns1"].CPUSeconds) / t1.Sub(t0).Seconds() * 100
	t.Logf("ns1's busy loop: %.2f%% of a CPU over %v (limit %v%%, %d periods throttled)", share, t1.Sub(t0).Round(time.Millisecond), l1["ns1"].CPULimit, l1["ns1"].Throttled)
	if share < 17 || share > 23 || l1["ns1"].CPULimit != 20 || l1["ns1"].Throttled == 0 {
		t.Errorf("ns1 had %.2f%% of a CPU, limit %v%%: want 20%% ± 3%%, throttled", share, l1["ns1"].CPULimit)
	}
	deadline := time.Now().Add(20 * time.Second)
	for l := l1["ns2"]; l.OOMKills == 0 || l.PidsRefused == 0; l = limits()["ns2"] {
		if time.Now().After(deadline) {
			t.Fatalf("ns2 after 20 s: %+v; want a process killed over 32MiB and forks refused over 20 pids", l)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if l := limits()["ns2"]; l.MemoryLimit != 32<<20 || l.PidsLimit != 20 || l.Pids > 20 {
		t.Errorf("ns2's limits read back %+v", l)
	}
	if b, _ := os.ReadFile(logPath(f.m.stateDir(), f.lab.Name, "ns2", "run", 0)); strings.Contains(string(b), "survived") {
		t.Errorf("the program past the memory limit survived: %q", b)
	}
	st, err := f.m.loadState(f.lab.Name)
	if err != nil || len(st.Cgroups) == 0 {
		t.Fatalf("state records no cgroups: %v", err)
	}
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	for _, d := range st.Cgroups {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left behind", d)
		}
	}
	f.assertGone()
}
