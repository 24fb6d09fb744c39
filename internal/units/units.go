// Package units reads and writes the values of a lab file and of nslab's
// flags that carry a unit, with one syntax for each kind of value, the
// same in every place:
//
//   - a percentage is a number with %: "0.5%", "100%" (never a bare
//     ratio; 0 alone is 0%);
//   - a bit rate is a number with bit, kbit, Mbit or Gbit: "10Mbit",
//     "1.5Gbit" (powers of 1000). The "bps" spellings are refused
//     everywhere: tc reads "mbps" as megabytes per second, so the same word
//     would mean two things to a reader who knows tc;
//   - a packet rate is a number with pps, kpps or Mpps: "200kpps";
//   - a size in bytes is a number with B, KiB, MiB, GiB or TiB (powers of
//     1024) or kB, MB, GB, TB (powers of 1000): "256MiB";
//   - a CPU limit is a percentage of one CPU, above 100% for more than
//     one: "50%", "150%".
//
// It imports nothing of nslab: the file format (topology/spec) and the
// command line both use it.
package units

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ParsePercent reads a percentage, "1%" or "0.5%", as a number 0..100; a
// bare 0 is 0% (the one number whose unit cannot matter).
func ParsePercent(s string) (float64, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 0 || v > 100 || math.IsNaN(v) {
		hint := ""
		if err == nil && !ok && v > 0 && v < 1 {
			hint = fmt.Sprintf(" (for a ratio of %g, write %s%%)", v, strconv.FormatFloat(v*100, 'f', -1, 64))
		}
		return 0, fmt.Errorf("%q: write a percentage between 0%% and 100%%, such as 1%% or 0.5%%%s", s, hint)
	}
	return v, nil
}

// FormatPercent writes p (0..100) as ParsePercent reads it ("1%", "0.1%").
func FormatPercent(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) + "%" }

var bitRateRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([kKmMgG]?)(bit|bps)$`)
})

// ParseBitRate reads a bit rate, "10Mbit", "512kbit", "1Gbit" or
// "100000bit", in bits per second (8bit to 1000Gbit).
func ParseBitRate(s string) (uint64, error) {
	m := bitRateRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("rate %q: write bits per second with a unit, such as 10Mbit, 512kbit or 1Gbit", s)
	}
	if m[3] == "bps" {
		return 0, fmt.Errorf("rate %q: write %s%sbit for bits per second (tc reads \"bps\" as bytes per second, so nslab takes it nowhere)", s, m[1], m[2])
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	v *= map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[strings.ToLower(m[2])]
	if v < 8 || v > 1e12 {
		return 0, fmt.Errorf("rate %q: between 8bit and 1000Gbit", s)
	}
	return uint64(math.Round(v)), nil
}

// FormatBitRate writes bits per second in the largest unit that keeps it
// whole ("10Mbit", "1500kbit"), as ParseBitRate and tc read it.
func FormatBitRate(bps uint64) string {
	for _, u := range []struct {
		name  string
		scale uint64
	}{{"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}} {
		if bps%u.scale == 0 {
			return fmt.Sprintf("%d%s", bps/u.scale, u.name)
		}
	}
	return fmt.Sprintf("%dbit", bps)
}

var packetRateRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*(pps|kpps|Mpps)$`)
})

// ParseRate reads a sending rate: "max" (both zero), a packet rate
// ("200kpps", "1.5Mpps") or a bit rate in whole megabits ("500Mbit",
// "1Gbit"; kernel pktgen takes its rate in Mbit/s), counting frames
// without their FCS as pktgen does.
func ParseRate(s string) (pps, mbit uint64, err error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, 0, nil
	}
	if m := packetRateRE().FindStringSubmatch(s); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		v *= map[string]float64{"pps": 1, "kpps": 1e3, "Mpps": 1e6}[m[2]]
		if v < 1 {
			return 0, 0, fmt.Errorf("rate %q is below 1 pps", s)
		}
		return uint64(v), 0, nil
	}
	bps, err := ParseBitRate(s)
	if err != nil {
		if strings.HasSuffix(s, "bps") {
			return 0, 0, err
		}
		return 0, 0, fmt.Errorf("rate %q: use max, a packet rate (pps, kpps, Mpps) or a bit rate (Mbit, Gbit), e.g. 200kpps or 500Mbit", s)
	}
	if bps < 1e6 || bps%1e6 != 0 {
		return 0, 0, fmt.Errorf("rate %q: a bit rate is given in whole Mbit (kernel pktgen's unit), at least 1Mbit; or give a packet rate such as 2kpps", s)
	}
	return 0, bps / 1e6, nil
}

var sizeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB|kB|MB|GB|TB)$`)
})

var sizeUnits = map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}

// ParseBytes reads a size, "256MiB", "1.5GiB", "64kB" or "4096B", in
// bytes (1B to 1024TiB).
func ParseBytes(s string) (uint64, error) {
	m := sizeRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("size %q: write bytes with a unit, such as 256MiB, 1GiB or 512kB (KiB, MiB, GiB are powers of 1024)", s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	v *= sizeUnits[m[2]]
	if v < 1 || v > 1<<50 {
		return 0, fmt.Errorf("size %q: between 1B and 1024TiB", s)
	}
	return uint64(math.Round(v)), nil
}

// FormatBytes writes a size in the largest power-of-1024 unit that keeps
// it whole ("256MiB", "1536KiB"), as ParseBytes reads it.
func FormatBytes(n uint64) string {
	for _, u := range []string{"TiB", "GiB", "MiB", "KiB"} {
		if scale := uint64(sizeUnits[u]); n >= scale && n%scale == 0 {
			return fmt.Sprintf("%d%s", n/scale, u)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// MaxCPULimit is the largest CPU limit ParseCPULimit takes: 1024 CPUs.
const MaxCPULimit = 1024 * 100

// ParseCPULimit reads a CPU limit, a percentage of one CPU: "50%" is half
// a CPU's time, "150%" one and a half CPUs' (at least 1%).
func ParseCPULimit(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 1 || v > MaxCPULimit || math.IsNaN(v) {
		return 0, fmt.Errorf("CPU limit %q: write a percentage of one CPU, at least 1%%, such as 50%% (half a CPU) or 150%% (one and a half)", s)
	}
	return v, nil
}
