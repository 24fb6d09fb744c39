package units

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for s, want := range map[string][2]uint64{"max": {0, 0}, "200kpps": {200000, 0}, "1.5Mpps": {1500000, 0}, "500Mbit": {0, 500}, "1Gbit": {0, 1000}, "77pps": {77, 0}} {
		pps, mbit, err := ParseRate(s)
		if err != nil || pps != want[0] || mbit != want[1] {
			t.Errorf("%s: %d pps %d Mbit %v", s, pps, mbit, err)
		}
	}
	for s, msg := range map[string]string{"fast": "use max", "10": "use max", "0pps": "below 1 pps", "5 kb": "use max",
		"500Mbps": "write 500Mbit", "1500kbit": "whole Mbit", "1.5Mbit": "whole Mbit"} {
		if _, _, err := ParseRate(s); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v; want an error saying %q", s, err, msg)
		}
	}
}

func TestBitRates(t *testing.T) {
	for in, want := range map[string]uint64{"10Mbit": 10e6, "512kbit": 512e3, "1Gbit": 1e9, "1.5mbit": 1.5e6, "100000bit": 1e5} {
		if got, err := ParseBitRate(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"10Mbps", "10mbps", "10kbps", "10", "7bit", "2000Gbit"} {
		if _, err := ParseBitRate(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	for in, want := range map[uint64]string{10e6: "10Mbit", 1500e3: "1500kbit", 1e9: "1Gbit", 1234: "1234bit"} {
		if got := FormatBitRate(in); got != want {
			t.Errorf("%d: %q", in, got)
		}
	}
}

func TestParsePercent(t *testing.T) {
	for in, want := range map[string]float64{"0.5%": 0.5, "100%": 100, " 1 %": 1, "0%": 0, "0": 0} {
		if got, err := ParsePercent(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for in, msg := range map[string]string{"0.005": "for a ratio of 0.005, write 0.5%", "101%": "between 0% and 100%", "-1%": "between", "NaN%": "between", "5": "such as 1%"} {
		if _, err := ParsePercent(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v; want an error saying %q", in, err, msg)
		}
	}
}

func TestBytesAndCPULimits(t *testing.T) {
	for in, want := range map[string]uint64{"256MiB": 256 << 20, "1.5GiB": 3 << 29, "64kB": 64000, "4096B": 4096, " 2 GB": 2e9} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"256", "256M", "256mib", "0B", "0.1B", "2048TiB", "-1MiB"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	for in, want := range map[uint64]string{256 << 20: "256MiB", 1536 << 10: "1536KiB", 1000: "1000B", 1 << 40: "1TiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("%d: %q", in, got)
		}
	}
	for in, want := range map[string]float64{"50%": 50, "150%": 150, " 20 %": 20} {
		if got, err := ParseCPULimit(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"0.5", "0%", "0.5%", "200000%", "half"} {
		if _, err := ParseCPULimit(in); err == nil || !strings.Contains(err.Error(), "percentage of one CPU") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// FuzzParse: no input makes the parsers panic, and what they accept is
// in range and reads back as it was written.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"max", "500Mbit", "10Mbps", "200kpps", "0.5%", "100%", "1e309%", "NaN", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := ParsePercent(s); err == nil {
			if p < 0 || p > 100 {
				t.Fatalf("%q: %v", s, p)
			}
			if q, err := ParsePercent(FormatPercent(p)); err != nil || q != p {
				t.Fatalf("%q: %v reads back as %v (%v)", s, p, q, err)
			}
		}
		if b, err := ParseBitRate(s); err == nil {
			if q, err := ParseBitRate(FormatBitRate(b)); err != nil || q != b {
				t.Fatalf("%q: %d reads back as %d (%v)", s, b, q, err)
			}
		}
		_, _, _ = ParseRate(s)
	})
}
