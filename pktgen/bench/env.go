package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// Env is what makes a run reproducible: the machine, the kernel, the
// settings that bound forwarding, the engine and the lab file.
type Env struct {
	Kernel   string            `json:"kernel"`
	CPUModel string            `json:"cpu_model"`
	CPUs     int               `json:"cpus"`
	Sysctls  map[string]string `json:"sysctls"`
	Engine   string            `json:"engine"`
	EngineV  string            `json:"engine_version,omitempty"`
	LabHash  string            `json:"lab_sha256,omitempty"`
	NSLab    string            `json:"nslab_version,omitempty"`
}

// globalSysctls bound what a forwarding path can do on this machine.
var globalSysctls = []string{"net.core.dev_weight", "net.core.netdev_max_backlog", "net.core.netdev_budget", "net.core.netdev_budget_usecs"}

func environment() Env {
	e := Env{CPUs: runtime.NumCPU(), Sysctls: map[string]string{}}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		e.Kernel = unix.ByteSliceToString(uts.Release[:]) + " " + unix.ByteSliceToString(uts.Version[:])
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	for _, k := range globalSysctls {
		if b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/")); err == nil {
			e.Sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	return e
}

// CPUUse is one CPU's time during a run, in percent.
type CPUUse struct {
	CPU     string  `json:"cpu"`
	User    float64 `json:"usr"`
	System  float64 `json:"sys"`
	IRQ     float64 `json:"irq"`
	SoftIRQ float64 `json:"soft"`
	Idle    float64 `json:"idle"`
}

// cpuTimes reads /proc/stat's per-CPU lines (jiffies).
func cpuTimes() map[string][]uint64 {
	out := map[string][]uint64{}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		v := make([]uint64, 8)
		for i := range v {
			v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		out[f[0]] = v
	}
	return out
}

// cpuUse turns two /proc/stat readings into percentages per CPU, as
// mpstat -P ALL shows them (usr includes nice, idle includes iowait).
func cpuUse(a, b map[string][]uint64) []CPUUse {
	var out []CPUUse
	for i := 0; ; i++ {
		name := "cpu" + strconv.Itoa(i)
		x, ok1 := a[name]
		y, ok2 := b[name]
		if !ok1 || !ok2 {
			return out
		}
		d := make([]float64, 8)
		var total float64
		for k := range d {
			d[k] = float64(y[k] - x[k])
			total += d[k]
		}
		if total == 0 {
			total = 1
		}
		// user nice system idle iowait irq softirq steal
		out = append(out, CPUUse{CPU: name, User: 100 * (d[0] + d[1]) / total, System: 100 * d[2] / total,
			IRQ: 100 * d[5] / total, SoftIRQ: 100 * d[6] / total, Idle: 100 * (d[3] + d[4]) / total})
	}
}

// ipDiscards are the IP MIB counters (/proc/net/snmp of a namespace) that
// count packets a router dropped.
var ipDiscards = []string{"InHdrErrors", "InAddrErrors", "InUnknownProtos", "InDiscards", "OutDiscards", "OutNoRoutes"}

// ipMIB reads the Ip: counters of a namespace, from a thread inside it.
func ipMIB(dir, nsName string) (map[string]uint64, error) {
	n, err := ns.Open(dir, nsName)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	var text []byte
	if err := n.Do(func() error { var err error; text, err = os.ReadFile("/proc/thread-self/net/snmp"); return err }); err != nil {
		return nil, fmt.Errorf("read IP counters of %s: %w", nsName, err)
	}
	out := map[string]uint64{}
	var names []string
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		for i, v := range f[1:] {
			if i < len(names) {
				out[names[i]], _ = strconv.ParseUint(v, 10, 64)
			}
		}
	}
	return out, nil
}

// softnet sums /proc/net/softnet_stat over CPUs: packets dropped because a
// CPU's backlog was full, and times a NAPI poll ran out of budget.
func softnet() (dropped, squeezed uint64) {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		d, _ := strconv.ParseUint(f[1], 16, 64)
		s, _ := strconv.ParseUint(f[2], 16, 64)
		dropped += d
		squeezed += s
	}
	return dropped, squeezed
}
