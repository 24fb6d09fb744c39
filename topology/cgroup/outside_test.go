package cgroup

import (
	"slices"
	"strings"
	"testing"
)

// A container's mountinfo on a v1 host: its runtime's view of its own
// cgroup first, then the host's hierarchies mounted over it (the agent
// pod's hostPath /sys/fs/cgroup).
const podMounts = `330 329 0:29 /kubepods/pod1/c1 /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu
334 329 0:31 /kubepods/pod1/c1 /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
340 329 0:38 /kubepods/pod1/c1 /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
400 329 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
401 400 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
402 400 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
403 400 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// TestOutsideIn: the host's hierarchies, mounted last, are the ones a
// program is put in; a container's own view alone is refused, saying so.
func TestOutsideIn(t *testing.T) {
	o, err := outsideIn([]byte(podMounts), "nslab-agent", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.v1, []string{"/sys/fs/cgroup/cpu/nslab-agent", "/sys/fs/cgroup/memory/nslab-agent"}) || o.v2 != "/sys/fs/cgroup/unified/nslab-agent" {
		t.Errorf("v1 %v, v2 %q", o.v1, o.v2)
	}
	own := strings.Join(strings.Split(podMounts, "\n")[:3], "\n")
	if _, err := outsideIn([]byte(own), "nslab-agent", false); err == nil || !strings.Contains(err.Error(), "is shown from /kubepods/pod1/c1, not its root") {
		t.Errorf("a container's own view: %v", err)
	}
	if _, err := outsideIn(nil, "nslab-agent", false); err == nil {
		t.Error("no cgroup mount: no error")
	}
}
