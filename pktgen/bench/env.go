package bench

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/pktgen/kernel"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// environment reads the machine's part of Env.
func environment() (report.Env, spec.CPUSet, error) {
	e := report.Env{Sysctls: map[string]string{}}
	online, err := host.Machine{}.OnlineCPUs()
	if err != nil {
		return e, nil, err
	}
	allowed, err := host.AllowedCPUs()
	if err != nil {
		return e, nil, err
	}
	e.CPUs, e.OnlineCPUs, e.AllowedCPUs = len(online), online.String(), allowed.String()
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		e.Kernel = unix.ByteSliceToString(uts.Release[:]) + " " + unix.ByteSliceToString(uts.Version[:])
	}
	e.CPUModel = cpuModel()
	for _, k := range report.GlobalSysctls {
		if b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/")); err == nil {
			e.Sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	return e, allowed, nil
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// placementLines describes the lab's placement for the report.
func placementLines(l *spec.Lab, t *spec.Traffic) []string {
	if l.Unplaced != "" {
		return []string{"none: " + l.Unplaced}
	}
	var out []string
	if len(t.CPUs) > 0 {
		out = append(out, fmt.Sprintf("sender %s: %d thread(s) on cpu %s", t.From.Node, len(t.CPUs), t.CPUs))
	}
	for _, n := range l.Nodes {
		if n.Placed() {
			mode := n.Receive
			if mode == "" {
				mode = spec.ReceiveRPS
			}
			out = append(out, fmt.Sprintf("node %s: receive work on cpu %s (%s)", n.Name, n.CPUs, mode))
		}
	}
	if len(out) == 0 {
		out = append(out, "none: the lab file places nothing (on veth a node's receive work then runs on the CPU that sends to it)")
	}
	return out
}

// engineVersion is pktgen's version for the kernel engine, nslab's for the
// userspace one.
func engineVersion(b *Bench) string {
	if b.eng.Name() != kernel.Name {
		return "nslab " + b.opts.Version
	}
	return "pktgen " + kernel.Version(b.run.Node(b.t.From.Node).NS)
}
