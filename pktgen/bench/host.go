package bench

import (
	"strconv"

	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/ns"
)

// What a run reads besides interface counters: CPU times and softnet per
// CPU (machine-wide files, read in the caller's namespace), and each
// router's IP counters (per namespace, read from a thread inside it).

// hostState is one reading of those.
type hostState struct {
	cpu     map[int][]uint64
	softnet map[int][]uint64
	mib     map[string]map[string]uint64 // router node -> Ip: counter -> value
	ct      map[string]map[string]uint64 // router node -> nf_conntrack column -> value (nil: none)
}

// snapshot reads the host state; routers maps router nodes to their open
// namespaces.
func snapshot(routers map[string]*ns.NS) (hostState, error) {
	h := hostState{cpu: kstat.CPUTimes(), softnet: kstat.Softnet(), mib: map[string]map[string]uint64{}, ct: map[string]map[string]uint64{}}
	for node, n := range routers {
		var err error
		if h.mib[node], h.ct[node], err = kstat.RouterCounters(n); err != nil {
			return h, err
		}
	}
	return h, nil
}

// cpuUse turns two /proc/stat readings into percentages per CPU, as
// mpstat -P ALL shows them (usr includes nice, idle includes iowait).
func cpuUse(a, b map[int][]uint64) []report.CPUUse {
	var out []report.CPUUse
	for n := 0; n < 1<<13; n++ {
		x, ok1 := a[n]
		y, ok2 := b[n]
		if !ok1 || !ok2 {
			if len(out) == len(b) {
				return out
			}
			continue
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
		out = append(out, report.CPUUse{CPU: "cpu" + strconv.Itoa(n), N: n, User: 100 * (d[0] + d[1]) / total, System: 100 * d[2] / total,
			IRQ: 100 * d[5] / total, SoftIRQ: 100 * d[6] / total, Steal: 100 * d[7] / total, Idle: 100 * (d[3] + d[4]) / total})
	}
	return out
}

// softnetUse is the change of softnet_stat per CPU.
func softnetUse(a, b map[int][]uint64) []report.SoftnetCPU {
	var out []report.SoftnetCPU
	for cpu := 0; len(out) < len(b) && cpu < 1<<13; cpu++ {
		x, ok1 := a[cpu]
		y, ok2 := b[cpu]
		if !ok1 || !ok2 {
			continue
		}
		// The counters are 32-bit in the file: wrap-around is modular.
		d := func(i int) uint64 { return uint64(uint32(y[i] - x[i])) }
		out = append(out, report.SoftnetCPU{CPU: cpu, Processed: d(0), Dropped: d(1), TimeSqueeze: d(2), ReceivedRPS: d(3)})
	}
	return out
}
