package inspect

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/nslab/nslab/internal/units"
	"github.com/nslab/nslab/topology/cgroup"
	"github.com/nslab/nslab/topology/lab/state"
)

// LimitsInfo is a node's use of its cgroup against its limits (limits:),
// as the kernel's cgroup files say now. A limit of 0 is none.
type LimitsInfo struct {
	// CPULimit is the quota, in percent of one CPU; CPUSeconds the CPU
	// time the node's processes have had since the cgroup was made, and
	// CPUAverage that over the time since (percent of one CPU; the
	// cgroup directory's time is when it was made);
	// Throttled how many 100 ms periods they reached the quota in.
	CPULimit   float64 `json:"cpu_limit_percent,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUAverage float64 `json:"cpu_average_percent"`
	Throttled  uint64  `json:"throttled_periods"`
	// Memory is what is charged now, MemoryPeak the most so far;
	// OOMKills how many processes the kernel killed for going over
	// MemoryLimit.
	Memory      uint64 `json:"memory_bytes"`
	MemoryPeak  uint64 `json:"memory_peak_bytes,omitempty"`
	MemoryLimit uint64 `json:"memory_limit_bytes,omitempty"`
	OOMKills    uint64 `json:"oom_kills"`
	// Pids is how many processes and threads there are; PidsRefused how
	// many forks PidsLimit refused.
	Pids        uint64 `json:"pids"`
	PidsLimit   uint64 `json:"pids_limit,omitempty"`
	PidsRefused uint64 `json:"pids_refused"`
	Error       string `json:"error,omitempty"`
}

// ReadLimits reads node's cgroup (made at since, unless the cgroup
// file system says when); nil when the state records none for it.
func ReadLimits(st *state.State, node string, since time.Time) *LimitsInfo {
	if len(st.Cgroups) == 0 {
		return nil
	}
	h, err := cgroup.Find()
	if err != nil {
		return &LimitsInfo{Error: err.Error()}
	}
	g := h.Node(st.Lab, node)
	if !slices.Contains(st.Cgroups, g.Dirs()[0]) {
		return nil
	}
	u, err := g.Read()
	if err != nil {
		return &LimitsInfo{Error: err.Error()}
	}
	info := &LimitsInfo{CPULimit: u.CPULimit, CPUSeconds: u.CPU.Seconds(), Throttled: u.Throttled,
		Memory: u.Memory, MemoryPeak: u.MemoryPeak, MemoryLimit: u.MemoryLimit, OOMKills: u.OOMKills,
		Pids: u.Pids, PidsLimit: u.PidsLimit, PidsRefused: u.PidsRefused}
	if fi, err := os.Stat(g.Dirs()[0]); err == nil {
		since = fi.ModTime() // made then (a deploy, or an apply after it)
	}
	if el := time.Since(since); el > 0 {
		info.CPUAverage = u.CPU.Seconds() / el.Seconds() * 100
	}
	return info
}

// printLimits lists the nodes' use against their limits, when a node has
// limits.
func printLimits(w io.Writer, info *LabInfo) {
	t := newTable(w, "NODE\tCPU (used, average since made / limit)\tTHROTTLED\tMEMORY (now, peak / limit)\tKILLED OVER MEMORY\tPIDS / LIMIT")
	for _, n := range info.Nodes {
		l := n.Limits
		if l == nil {
			continue
		}
		if l.Error != "" {
			t.row("%s\t%s\t\t\t\t", n.Node, l.Error)
			continue
		}
		t.row("%s\t%.1fs, %.1f%% / %s\t%d periods\t%s, %s / %s\t%d\t%d / %s (%d refused)", n.Node,
			l.CPUSeconds, l.CPUAverage, limitText(l.CPULimit > 0, units.FormatPercent(l.CPULimit)), l.Throttled,
			units.FormatBytes(l.Memory), units.FormatBytes(l.MemoryPeak), limitText(l.MemoryLimit > 0, units.FormatBytes(l.MemoryLimit)),
			l.OOMKills, l.Pids, limitText(l.PidsLimit > 0, fmt.Sprint(l.PidsLimit)), l.PidsRefused)
	}
	t.end()
}

// limitText is s, or "none" when there is no limit.
func limitText(limited bool, s string) string {
	if !limited {
		return "none"
	}
	return s
}
