package plot

import (
	"bytes"
	"encoding/json"
	"strings"

	"os"
	"path/filepath"
	"testing"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/receive"
)

func TestPlots(t *testing.T) {
	var reps []*bench.Report
	var rs []*bench.SearchResult
	for i, f := range []int{64, 128, 256, 512, 1024, 1518} {
		r := &bench.Report{Lab: "crs", Traffic: "sweep", Engine: "kernel pktgen", Frame: f, PPS: 900000 / float64(i+1)}
		r.MbpsL2, r.MbpsL1 = r.PPS*float64(f)*8/1e6, r.PPS*float64(f+20)*8/1e6
		reps = append(reps, r)
		rs = append(rs, &bench.SearchResult{Frame: f, ThroughputPPS: r.PPS, MbpsL2: r.MbpsL2, Engine: "kernel pktgen"})
	}
	dir := t.TempDir()
	for _, name := range []string{"sweep.png", "sweep.svg", "search.png"} {
		p := filepath.Join(dir, name)
		var err error
		if name == "search.png" {
			err = Search(p, "crs", rs)
		} else {
			err = Sweep(p, reps)
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
	if err := Sweep(filepath.Join(dir, "x.jpg"), reps); err == nil {
		t.Error("accepted .jpg")
	}
}

// TestReadResultsLines reads what --out writes: runs and searches, one per
// line, in order.
func TestReadResultsLines(t *testing.T) {
	var b strings.Builder
	for _, v := range []any{&bench.Report{Frame: 64, PPS: 1}, &bench.SearchResult{Frame: 128, ThroughputPPS: 2}, &bench.Report{Frame: 256}} {
		line, _ := json.Marshal(v)
		b.Write(append(line, '\n'))
	}
	reps, rs, err := Read(strings.NewReader(b.String()))
	if err != nil || len(reps) != 2 || len(rs) != 1 || reps[1].Frame != 256 || rs[0].ThroughputPPS != 2 {
		t.Fatalf("%v %v %v", reps, rs, err)
	}
	if _, _, err := Read(strings.NewReader("{\"frame\": 64}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
}

// TestLatencyCDF draws the distribution of two runs' latency histograms.
func TestLatencyCDF(t *testing.T) {
	var reps []*bench.Report
	for i, load := range []string{"10% of 300000 pps", "90% of 300000 pps"} {
		tr := receive.NewTracker()
		for k := range 1000 {
			tr.Add(0, uint32(k+1), 0, int64((i+1)*(k+1)*1000))
		}
		reps = append(reps, &bench.Report{Traffic: "forward", Frame: 64, Load: load, Latency: tr.Latency("every packet", 1)})
	}
	p := filepath.Join(t.TempDir(), "cdf.png")
	if err := LatencyCDF(p, reps); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 5000 {
		t.Errorf("cdf.png: %d bytes, %v", len(b), err)
	}
	if err := LatencyCDF(p, []*bench.Report{{Frame: 64}}); err == nil || !strings.Contains(err.Error(), "--latency") {
		t.Errorf("no histogram: %v", err)
	}
}
