package cgroup

import (
	"strings"
	"testing"
)

// mountinfo lines as the kernel writes them: a hybrid host (v1
// controllers, an empty unified hierarchy) and a v2-only one.
const (
	hybrid = `30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw
33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:13 - cgroup cgroup rw,cpu,cpuacct
34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory
35 30 0:31 / /sys/fs/cgroup/pids rw,nosuid shared:15 - cgroup cgroup rw,pids
`
	unified = `30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
`
)

func TestFind(t *testing.T) {
	h, err := findIn([]byte(unified), func(string) string { return "cpuset cpu io memory hugetlb pids rdma misc\n" })
	if err != nil || h.Version != 2 || h.V2 != "/sys/fs/cgroup" {
		t.Fatalf("unified: %+v %v", h, err)
	}
	if d := h.Node("crs", "r1").Dirs(); len(d) != 1 || d[0] != "/sys/fs/cgroup/nslab/crs/r1" {
		t.Errorf("unified dirs %v", d)
	}
	// The unified mount of a hybrid host has the controllers v1 does not.
	h, err = findIn([]byte(hybrid), func(string) string { return "hugetlb\n" })
	if err != nil || h.Version != 1 {
		t.Fatalf("hybrid: %+v %v", h, err)
	}
	want := []string{"/sys/fs/cgroup/cpu,cpuacct/nslab/crs/r1", "/sys/fs/cgroup/memory/nslab/crs/r1", "/sys/fs/cgroup/pids/nslab/crs/r1"}
	if d := h.Node("crs", "r1").Dirs(); strings.Join(d, " ") != strings.Join(want, " ") {
		t.Errorf("hybrid dirs %v, want %v (cpu and cpuacct mounted together: one)", d, want)
	}
	// Neither: the error says what is missing and how to fix it.
	_, err = findIn([]byte(strings.Split(hybrid, "\n")[1]+"\n"+strings.Split(hybrid, "\n")[3]+"\n"), func(string) string { return "memory\n" })
	if err == nil || !strings.Contains(err.Error(), "no v1 mount of cpu, pids, cpuacct") || !strings.Contains(err.Error(), "remove limits:") {
		t.Errorf("missing controllers: %v", err)
	}
}

func TestUnescape(t *testing.T) {
	if got := unescape(`/mnt/my\040cgroups`); got != "/mnt/my cgroups" {
		t.Errorf("%q", got)
	}
}
