// Package kstat reads the kernel's own statistics a forwarding
// benchmark needs besides interface counters: CPU times (/proc/stat),
// softnet_stat per CPU, a namespace's IP MIB (snmp, snmp6) and its
// connection tracking statistics, and a link's speed. Machine-wide files
// are read in the caller's namespace; per-namespace ones from a thread
// inside it (ns.NS.Do), through /proc/thread-self, which is that thread's
// namespace whatever the process's is. Each reader returns the raw
// counters; what they mean over a run is the caller's.
package kstat

import (
	"fmt"
	"github.com/nslab/nslab/pktgen/measured"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/topology/ns"
)

// CPUTimes reads /proc/stat's per-CPU lines (jiffies), by CPU number.
func CPUTimes() map[int][]uint64 {
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

// Softnet reads /proc/net/softnet_stat by CPU: processed, dropped,
// time_squeeze and received_rps (columns 1, 2, 3 and 10, hex). The CPU is
// column 13 on kernels that print it, else the row's place among the
// online CPUs.
func Softnet() map[int][]uint64 {
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

// IPDiscards are the IP MIB counters that count packets the stack
// discarded (measured.IPDiscards).
var IPDiscards = measured.IPDiscards

// NeighDiscards is the key RouterCounters gives the packets its
// neighbour tables dropped while waiting for a next hop's address to
// resolve (the unresolved_discards of /proc/net/stat/arp_cache and
// ndisc_cache, summed over CPUs): the first packets to a next hop no one
// has talked to yet, after a route changed, die there and in no IP MIB
// counter.
const NeighDiscards = measured.NeighDiscards

// ForwardedKey names the IP MIB counter of forwarded datagrams per family.
func ForwardedKey(ipv6 bool) string {
	if ipv6 {
		return "Ip6OutForwDatagrams"
	}
	return "ForwDatagrams"
}

// RouterCounters reads, from one thread inside namespace n, its IPv4
// (Ip:) and IPv6 (Ip6*) counters and its connection tracking statistics
// (nil when the kernel has no connection tracking).
func RouterCounters(n *ns.NS) (mib, ct map[string]uint64, err error) {
	var text, text6, ctText []byte
	var neigh uint64
	var ext []byte
	err = n.Do(func() error {
		var err error
		if text, err = os.ReadFile("/proc/thread-self/net/snmp"); err != nil {
			return err
		}
		text6, _ = os.ReadFile("/proc/thread-self/net/snmp6") // absent without IPv6
		ext, _ = os.ReadFile("/proc/thread-self/net/netstat") // IpExt: InNoRoutes
		for _, f := range []string{"arp_cache", "ndisc_cache"} {
			if b, err := os.ReadFile("/proc/thread-self/net/stat/" + f); err == nil {
				neigh += ParseNeighStat(string(b))
			}
		}
		ctText, err = os.ReadFile("/proc/thread-self/net/stat/nf_conntrack")
		if os.IsNotExist(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read IP and conntrack counters of %s: %w", n.Name, err)
	}
	mib = ParseSNMP(string(text))
	for _, line := range strings.Split(string(text6), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[0], "Ip6") {
			mib[f[0]], _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	mib[NeighDiscards] = neigh
	if v, ok := parseLines(string(ext), "IpExt:")["InNoRoutes"]; ok {
		mib["InNoRoutes"] = v // forwarded packets with no route (Linux counts them in IpExt, not Ip)
	}
	if ctText != nil {
		ct = ParseConntrack(string(ctText))
	}
	return mib, ct, nil
}

// ParseNeighStat sums the unresolved_discards column of a neighbour
// table's statistics (/proc/net/stat/arp_cache: a line of names, then a
// line of hex values per CPU).
func ParseNeighStat(text string) uint64 {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 {
		return 0
	}
	col := slices.Index(strings.Fields(lines[0]), "unresolved_discards")
	if col < 0 {
		return 0
	}
	var sum uint64
	for _, l := range lines[1:] {
		if f := strings.Fields(l); col < len(f) {
			v, _ := strconv.ParseUint(f[col], 16, 64)
			sum += v
		}
	}
	return sum
}

// ParseSNMP reads the Ip: lines of /proc/net/snmp (a line of names, then
// a line of values).
func ParseSNMP(text string) map[string]uint64 { return parseLines(text, "Ip:") }

// parseLines reads the two lines of /proc/net/snmp or netstat that start
// with prefix: names, then values.
func parseLines(text, prefix string) map[string]uint64 {
	out := map[string]uint64{}
	var names []string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != prefix {
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

// ParseConntrack sums the per-CPU rows of /proc/net/stat/nf_conntrack
// (entries, the same on every row, is taken once).
func ParseConntrack(text string) map[string]uint64 {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 {
		return nil
	}
	names := strings.Fields(lines[0])
	out := map[string]uint64{}
	for _, line := range lines[1:] {
		for i, f := range strings.Fields(line) {
			if i >= len(names) {
				break
			}
			v, _ := strconv.ParseUint(f, 16, 64)
			if names[i] == "entries" {
				out["entries"] = v
				continue
			}
			out[names[i]] += v
		}
	}
	return out
}

// LinkSpeed is the speed the driver of interface ifname in namespace n
// reports, in Mb/s; 0 when unknown or it cannot be asked. veth reports a
// nominal 10000.
func LinkSpeed(n *ns.NS, ifname string) uint32 {
	var speed uint32
	_ = n.Do(func() error { // unknown when it cannot be asked: 0
		var err error
		speed, err = ethtool.Speed(ifname)
		return err
	})
	return speed
}

// LineRatePPS is the most frames of a size a link of speed Mb/s carries:
// each frame also costs 20 bytes of preamble and inter-frame gap.
func LineRatePPS(speedMbps uint32, frame int) float64 {
	return float64(speedMbps) * 1e6 / float64((frame+20)*8)
}

// TCPCounters reads, from one thread inside namespace n, its TCP counters:
// the Tcp: lines of /proc/net/snmp (RetransSegs, OutSegs, ...) and the
// TcpExt: lines of /proc/net/netstat (TCPSpuriousRTOs, TCPLostRetransmit,
// ...), in one map.
func TCPCounters(n *ns.NS) (map[string]uint64, error) {
	var snmp, netstat []byte
	err := n.Do(func() error {
		var err error
		if snmp, err = os.ReadFile("/proc/thread-self/net/snmp"); err != nil {
			return err
		}
		netstat, err = os.ReadFile("/proc/thread-self/net/netstat")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the TCP counters of %s: %w", n.Name, err)
	}
	out := parseLines(string(snmp), "Tcp:")
	for k, v := range parseLines(string(netstat), "TcpExt:") {
		out[k] = v
	}
	return out, nil
}
