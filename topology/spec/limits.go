package spec

import (
	"github.com/nslab/nslab/internal/units"
)

// Limits bound what a node's processes (its services, routing daemons and
// exec: lines) may take, through a cgroup of the node's own: the CPU time
// (CPU, a percentage of one CPU: 50 is half a CPU, 150 one and a half),
// the memory (bytes; a process that takes more is killed by the kernel)
// and the number of processes and threads. Zero: no limit of that kind.
type Limits struct {
	CPU    float64
	Memory uint64
	Pids   int
}

var limitsKeys = keysOf(limitsDef)

// MaxPids is the largest pids: limit (the kernel's PID_MAX_LIMIT).
const MaxPids = 1 << 22

// parseLimits reads limits: {cpu: 50%, memory: 256MiB, pids: 100}.
func (r *reporter) parseLimits(e kv) *Limits {
	l := &Limits{}
	f := r.fields(e.v, e.path, "limits:", limitsKeys...)
	if c, ok := f["cpu"]; ok {
		if s, ok := r.str(c.v, c.path, "a percentage of one CPU, such as 50%"); ok {
			v, err := units.ParseCPULimit(s)
			if err != nil {
				r.errf(c.path, "%v", err)
			}
			l.CPU = v
		}
	}
	if m, ok := f["memory"]; ok {
		if s, ok := r.str(m.v, m.path, "a size such as 256MiB"); ok {
			v, err := units.ParseBytes(s)
			switch {
			case err != nil:
				r.errf(m.path, "%v", err)
			case v < 1<<20:
				r.errf(m.path, "memory limit %s is below 1MiB, less than a shell needs to start: give at least 1MiB, such as 64MiB", s)
			}
			l.Memory = v
		}
	}
	if p, ok := f["pids"]; ok {
		l.Pids, _ = r.integer(p.v, p.path, "a number of processes and threads", 1, MaxPids)
	}
	if len(f) == 0 {
		r.errf(e.path, "limits: without cpu, memory or pids limits nothing: give one, such as {cpu: 50%%}, or remove the key")
	}
	return l
}
