package cgroup

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Usage is what a node's cgroup has used, read from the kernel's files,
// with its limits as the kernel holds them (zero: none).
type Usage struct {
	// CPU is the CPU time its processes have had since the cgroup was
	// made (v2 cpu.stat usage_usec; v1 cpuacct.usage); Throttled how
	// many periods they hit the quota in (nr_throttled).
	CPU       time.Duration
	Throttled uint64
	// CPULimit is the quota in percent of one CPU.
	CPULimit float64
	// Memory is the memory charged now, MemoryPeak the most so far,
	// MemoryLimit the limit; OOMKills counts the processes the kernel
	// killed for going over it (v2 memory.events oom_kill; v1
	// memory.oom_control oom_kill).
	Memory, MemoryPeak, MemoryLimit uint64
	OOMKills                        uint64
	// Pids is how many processes and threads it has; PidsLimit the
	// limit; PidsRefused how many forks the limit refused.
	Pids, PidsLimit, PidsRefused uint64
}

// unlimited is what the kernel writes for no limit (and v1's largest
// memory limit is a page-rounded LONG_MAX: anything above 2^62).
func unlimited(s string) bool {
	if s == "max" {
		return true
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return err == nil && v > 1<<62
}

// Read reads g's use and limits.
func (g *Group) Read() (Usage, error) {
	var u Usage
	var err error
	if g.h.Version == 2 {
		err = g.read2(&u)
	} else {
		err = g.read1(&u)
	}
	if err != nil {
		return u, fmt.Errorf("read cgroup %s: %w", g.path, err)
	}
	return u, nil
}

func (g *Group) read2(u *Usage) error {
	stat, err := g.keyed("cpu", "cpu.stat")
	if err != nil {
		return err
	}
	u.CPU, u.Throttled = time.Duration(stat["usage_usec"])*time.Microsecond, stat["nr_throttled"]
	if s, err := g.read("cpu", "cpu.max"); err == nil {
		if q, p, ok := strings.Cut(s, " "); ok && q != "max" {
			qv, _ := strconv.ParseFloat(q, 64)
			pv, _ := strconv.ParseFloat(p, 64)
			if pv > 0 {
				u.CPULimit = qv / pv * 100
			}
		}
	}
	u.Memory, _ = g.number("memory", "memory.current")
	u.MemoryPeak, _ = g.number("memory", "memory.peak") // kernels before 5.19 have none
	u.MemoryLimit, _ = g.number("memory", "memory.max")
	if ev, err := g.keyed("memory", "memory.events"); err == nil {
		u.OOMKills = ev["oom_kill"]
	}
	return g.readPids(u)
}

func (g *Group) read1(u *Usage) error {
	ns, err := g.number("cpuacct", "cpuacct.usage")
	if err != nil {
		return err
	}
	u.CPU = time.Duration(ns)
	if stat, err := g.keyed("cpu", "cpu.stat"); err == nil {
		u.Throttled = stat["nr_throttled"]
	}
	q, qerr := g.read("cpu", "cpu.cfs_quota_us")
	p, perr := g.number("cpu", "cpu.cfs_period_us")
	if qv, err := strconv.ParseFloat(q, 64); qerr == nil && perr == nil && err == nil && qv > 0 && p > 0 {
		u.CPULimit = qv / float64(p) * 100
	}
	u.Memory, _ = g.number("memory", "memory.usage_in_bytes")
	u.MemoryPeak, _ = g.number("memory", "memory.max_usage_in_bytes")
	u.MemoryLimit, _ = g.number("memory", "memory.limit_in_bytes")
	if oc, err := g.keyed("memory", "memory.oom_control"); err == nil {
		u.OOMKills = oc["oom_kill"]
	}
	return g.readPids(u)
}

func (g *Group) readPids(u *Usage) error {
	var err error
	if u.Pids, err = g.number("pids", "pids.current"); err != nil {
		return err
	}
	u.PidsLimit, _ = g.number("pids", "pids.max")
	if ev, err := g.keyed("pids", "pids.events"); err == nil {
		u.PidsRefused = ev["max"]
	}
	return nil
}

// number reads a file holding one number; "max" (no limit) reads as 0.
func (g *Group) number(controller, name string) (uint64, error) {
	s, err := g.read(controller, name)
	if err != nil || unlimited(s) {
		return 0, err
	}
	return strconv.ParseUint(s, 10, 64)
}

// keyed reads a file of "key value" lines.
func (g *Group) keyed(controller, name string) (map[string]uint64, error) {
	s, err := g.read(controller, name)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			out[k], _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return out, nil
}
