package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"

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
	h := hostState{cpu: cpuTimes(), softnet: softnetStat(), mib: map[string]map[string]uint64{}, ct: map[string]map[string]uint64{}}
	for node, n := range routers {
		var err error
		if h.mib[node], h.ct[node], err = routerCounters(n); err != nil {
			return h, err
		}
	}
	return h, nil
}

// cpuTimes reads /proc/stat's per-CPU lines (jiffies), by CPU number.
func cpuTimes() map[int][]uint64 {
	out := map[int][]uint64{}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(f[0], "cpu"))
		if err != nil {
			continue
		}
		v := make([]uint64, 8)
		for i := range v {
			v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		out[n] = v
	}
	return out
}

// cpuUse turns two /proc/stat readings into percentages per CPU, as
// mpstat -P ALL shows them (usr includes nice, idle includes iowait).
func cpuUse(a, b map[int][]uint64) []CPUUse {
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

// softnetStat reads /proc/net/softnet_stat by CPU: processed, dropped,
// time_squeeze and received_rps (columns 1, 2, 3 and 10, hex). The CPU is
// column 13 on kernels that print it, else the row's place among the
// online CPUs.
func softnetStat() map[int][]uint64 {
	out := map[int][]uint64{}
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return out
	}
	for row, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		cpu := row
		if len(f) >= 13 {
			if c, err := strconv.ParseUint(f[12], 16, 32); err == nil {
				cpu = int(c)
			}
		}
		v := make([]uint64, 4)
		for i, col := range []int{0, 1, 2, 9} {
			v[i], _ = strconv.ParseUint(f[col], 16, 64)
		}
		out[cpu] = v
	}
	return out
}

// softnetUse is the change of softnet_stat per CPU.
func softnetUse(a, b map[int][]uint64) []SoftnetCPU {
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

// ipDiscards are the IP MIB counters (/proc/net/snmp and snmp6 of a
// namespace) that count packets a router dropped.
var ipDiscards = []string{"InHdrErrors", "InAddrErrors", "InUnknownProtos", "InDiscards", "OutDiscards", "OutNoRoutes",
	"Ip6InHdrErrors", "Ip6InTooBigErrors", "Ip6InNoRoutes", "Ip6InAddrErrors", "Ip6InUnknownProtos", "Ip6InTruncatedPkts",
	"Ip6InDiscards", "Ip6OutDiscards", "Ip6OutNoRoutes"}

// forwarded names the IP MIB counter of forwarded datagrams per family.
func forwardedKey(ipv6 bool) string {
	if ipv6 {
		return "Ip6OutForwDatagrams"
	}
	return "ForwDatagrams"
}

// routerCounters reads, from one thread inside namespace n, its IPv4
// (Ip:) and IPv6 (Ip6*) counters and its connection tracking statistics
// (nil when the kernel has no connection tracking).
func routerCounters(n *ns.NS) (mib, ct map[string]uint64, err error) {
	var text, text6, ctText []byte
	err = n.Do(func() error {
		var err error
		if text, err = os.ReadFile("/proc/thread-self/net/snmp"); err != nil {
			return err
		}
		text6, _ = os.ReadFile("/proc/thread-self/net/snmp6") // absent without IPv6
		ctText, err = os.ReadFile("/proc/thread-self/net/stat/nf_conntrack")
		if os.IsNotExist(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read IP and conntrack counters of %s: %w", n.Name, err)
	}
	mib = parseSNMP(string(text))
	for _, line := range strings.Split(string(text6), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[0], "Ip6") {
			mib[f[0]], _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	if ctText != nil {
		ct = parseConntrack(string(ctText))
	}
	return mib, ct, nil
}

// parseSNMP reads the Ip: lines of /proc/net/snmp (a line of names, then
// a line of values).
func parseSNMP(text string) map[string]uint64 {
	out := map[string]uint64{}
	var names []string
	for _, line := range strings.Split(text, "\n") {
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
	return out
}
