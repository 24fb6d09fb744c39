package report

import "strconv"

// What a run (or a live view) reads of the machine, per CPU, turned into
// what it means between two readings (kstat.CPUTimes, kstat.Softnet).

// CPUUses turns two /proc/stat readings into percentages per CPU, as
// mpstat -P ALL shows them (usr includes nice, idle includes iowait).
func CPUUses(a, b map[int][]uint64) []CPUUse {
	var out []CPUUse
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
		out = append(out, CPUUse{CPU: "cpu" + strconv.Itoa(n), N: n, User: 100 * (d[0] + d[1]) / total, System: 100 * d[2] / total,
			IRQ: 100 * d[5] / total, SoftIRQ: 100 * d[6] / total, Steal: 100 * d[7] / total, Idle: 100 * (d[3] + d[4]) / total})
	}
	return out
}

// SoftnetUses is the change of softnet_stat per CPU.
func SoftnetUses(a, b map[int][]uint64) []SoftnetCPU {
	var out []SoftnetCPU
	for cpu := 0; len(out) < len(b) && cpu < 1<<13; cpu++ {
		x, ok1 := a[cpu]
		y, ok2 := b[cpu]
		if !ok1 || !ok2 {
			continue
		}
		// The counters are 32-bit in the file: wrap-around is modular.
		d := func(i int) uint64 { return uint64(uint32(y[i] - x[i])) }
		out = append(out, SoftnetCPU{CPU: cpu, Processed: d(0), Dropped: d(1), TimeSqueeze: d(2), ReceivedRPS: d(3)})
	}
	return out
}
