package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestPlots(t *testing.T) {
	var reps []*Report
	var rs []*SearchResult
	for i, f := range []int{64, 128, 256, 512, 1024, 1518} {
		r := &Report{Lab: "crs", Traffic: "sweep", Engine: "kernel pktgen", Frame: f, PPS: 900000 / float64(i+1)}
		r.MbpsL2, r.MbpsL1 = mbps(r.PPS, f)
		reps = append(reps, r)
		rs = append(rs, &SearchResult{Frame: f, ThroughputPPS: r.PPS, MbpsL2: r.MbpsL2, Engine: "kernel pktgen"})
	}
	dir := t.TempDir()
	for _, name := range []string{"sweep.png", "sweep.svg", "search.png"} {
		p := filepath.Join(dir, name)
		var err error
		if name == "search.png" {
			err = PlotSearch(p, "crs", rs)
		} else {
			err = PlotSweep(p, reps)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		magic := []byte("\x89PNG")
		if filepath.Ext(name) == ".svg" {
			magic = []byte("<?xml")
		}
		if !bytes.HasPrefix(b, magic) || len(b) < 5000 {
			t.Errorf("%s: %d bytes starting %q", name, len(b), b[:min(8, len(b))])
		}
		if filepath.Ext(name) == ".svg" && !bytes.Contains(b, []byte("frame size")) {
			t.Errorf("svg has no axis label")
		}
	}
	if err := PlotSweep(filepath.Join(dir, "x.jpg"), reps); err == nil {
		t.Error("accepted .jpg")
	}
}
