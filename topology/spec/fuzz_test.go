package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/units"
)

// The fuzz targets of the file's parsers. Their seeds run as ordinary
// tests in make test; make fuzz runs each for FUZZTIME. A crash found is
// fixed and its input kept under testdata/fuzz/NAME as a regression case.

// parseSeeds is every example and every validation table case: the
// files a user writes, and each way the rules refuse one.
func parseSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	files, _ := filepath.Glob("../../examples/*.yaml")
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	read := func(name string) string {
		data, err := os.ReadFile("../../examples/" + name)
		if err != nil {
			tb.Fatal(err)
		}
		return string(data)
	}
	for _, c := range ruleCases {
		out = append(out, []byte(c.yaml))
	}
	edit := func(src, from, to string) { out = append(out, []byte(strings.Replace(src, from, to, 1))) }
	for _, c := range impairCases {
		edit(impaired, c.from, c.to)
	}
	for _, c := range netfilterCases {
		edit(natLab, c.from, c.to)
	}
	for _, c := range placementCases {
		edit(placed, c.from, c.to)
	}
	for _, c := range sriovCases {
		edit(sriovBase, c.from, c.to)
	}
	for _, c := range hostCases {
		edit(read("two-hosts.yaml"), c.from, c.to)
	}
	for _, c := range trafficCases {
		edit(read("client-router-server.yaml"), c.edit, c.where)
	}
	for _, c := range mixCases {
		edit(read("client-router-server.yaml"), c.from, c.to)
	}
	return out
}

// FuzzParse: any input gives a lab or problems, never a panic; a lab it
// accepts parses again from its own source to the same shape.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds(f) {
		if len(s) <= 1<<20 { // the oversize case is one size check, and slows every mutation
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		again, err := Parse("f.yaml", l.Source)
		if err != nil {
			t.Fatalf("accepted once, refused from its own source: %v", err)
		}
		if len(again.Nodes) != len(l.Nodes) || len(again.Links) != len(l.Links) || len(again.Traffic) != len(l.Traffic) {
			t.Fatalf("parsed twice to different labs: %d/%d nodes, %d/%d links", len(l.Nodes), len(again.Nodes), len(l.Links), len(again.Links))
		}
	})
}

// FuzzCPUList: a CPU list that parses prints back to a list that parses
// to the same set, and its mask parses to the same set too.
func FuzzCPUList(f *testing.F) {
	for _, s := range []string{"0", "1-3", "0,2-3", "3,1", "32", "0,33", "", "3-1", "all", "0-", "8191", "-1", "1,,2", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseCPUList(s)
		if err != nil {
			return
		}
		back, err := ParseCPUList(set.String())
		if err != nil || back.String() != set.String() {
			t.Fatalf("%q -> %q -> %q, %v", s, set.String(), back.String(), err)
		}
		if m, err := ParseCPUMask(set.Mask()); err != nil || m.String() != set.String() {
			t.Fatalf("%q: mask %q -> %q, %v", s, set.Mask(), m.String(), err)
		}
	})
}

// FuzzCPUMask: a mask that parses gives a set whose mask parses back to
// the same set.
func FuzzCPUMask(f *testing.F) {
	for _, s := range []string{"1", "f", "d", "1,00000000", "2,00000001", "0", "", "g", "ffffffff,ffffffff", ",1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseCPUMask(s)
		if err != nil {
			return
		}
		if back, err := ParseCPUMask(set.Mask()); err != nil || back.String() != set.String() {
			t.Fatalf("%q -> %q -> %q, %v", s, set.Mask(), back.String(), err)
		}
	})
}

// FuzzValues: rates, bit rates, percentages and delays parse or refuse,
// never panic, and what parses is in range.
func FuzzValues(f *testing.F) {
	for _, s := range []string{"max", "500Mbit", "500Mbps", "1Gbit", "100000pps", "10Mbit", "1.5Gbit", "20ms", "1s", "250us", "0.5%", "100%", "50", "-1", "1e309", "NaN", "", "0x10pps", "9999999999999999999pps"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := units.ParsePercent(s); err == nil && (p < 0 || p > 100 || p != p) {
			t.Fatalf("percent %q = %v", s, p)
		}
		if d, err := ParseDelay(s); err == nil && d < 0 {
			t.Fatalf("delay %q = %v", s, d)
		}
		if d, err := time.ParseDuration(s); err == nil && d < 0 {
			return // the file's durations refuse negatives in validation
		}
		_, _ = units.ParseBitRate(s)
		_, _, _ = units.ParseRate(s)
		if p, err := ParsePorts(s); err == nil && (p[0] < 1 || p[1] > 65535 || p[0] > p[1]) {
			t.Fatalf("ports %q = %v", s, p)
		}
	})
}
