package plot

import (
	"bytes"
	"encoding/json"
	"strings"

	"os"
	"path/filepath"
	"testing"

	"github.com/nslab/nslab/pktgen/receive"
	"github.com/nslab/nslab/pktgen/report"
)

func TestPlots(t *testing.T) {
	var reps []*report.Report
	var rs []*report.SearchResult
	for i, f := range []int{64, 128, 256, 512, 1024, 1518} {
		r := &report.Report{Lab: "crs", Traffic: "sweep", Engine: "kernel pktgen", Frame: f, PPS: 900000 / float64(i+1)}
		r.MbpsL2, r.MbpsL1 = r.PPS*float64(f)*8/1e6, r.PPS*float64(f+20)*8/1e6
		reps = append(reps, r)
		rs = append(rs, &report.SearchResult{Frame: f, ThroughputPPS: r.PPS, MbpsL2: r.MbpsL2, Engine: "kernel pktgen"})
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
	for _, v := range []any{&report.Report{Frame: 64, PPS: 1}, &report.SearchResult{Frame: 128, ThroughputPPS: 2}, &report.Report{Frame: 256}, &report.RFC2544Result{Frame: 512, BackToBack: &report.BackToBack{MeanFrames: 3}}} {
		line, _ := json.Marshal(v)
		b.Write(append(line, '\n'))
	}
	in, err := Read(strings.NewReader(b.String()))
	if err != nil || len(in.Reports) != 2 || len(in.Searches) != 1 || in.Reports[1].Frame != 256 || in.Searches[0].ThroughputPPS != 2 {
		t.Fatalf("%+v %v", in, err)
	}
	if len(in.RFC2544) != 1 || in.RFC2544[0].BackToBack.MeanFrames != 3 {
		t.Errorf("RFC 2544 line: %+v", in.RFC2544)
	}
	if _, err := Read(strings.NewReader("{\"frame\": 64}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
}

// TestLatencyCDF draws the distribution of two runs' latency histograms.
func TestLatencyCDF(t *testing.T) {
	var reps []*report.Report
	for i, load := range []string{"10% of 300000 pps", "90% of 300000 pps"} {
		tr := receive.NewTracker()
		for k := range 1000 {
			tr.Add(0, uint32(k+1), 0, int64((i+1)*(k+1)*1000))
		}
		reps = append(reps, &report.Report{Traffic: "forward", Frame: 64, Load: load, Latency: tr.Latency("every packet", 1)})
	}
	p := filepath.Join(t.TempDir(), "cdf.png")
	if err := LatencyCDF(p, reps); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 5000 {
		t.Errorf("cdf.png: %d bytes, %v", len(b), err)
	}
	if err := LatencyCDF(p, []*report.Report{{Frame: 64}}); err == nil || !strings.Contains(err.Error(), "latency histogram") {
		t.Errorf("no histogram: %v", err)
	}
}

// TestRFC2544Plot draws throughput and the frame loss rate of two frame
// sizes.
func TestRFC2544Plot(t *testing.T) {
	var rs []*report.RFC2544Result
	for _, f := range []int{64, 1518} {
		r := &report.RFC2544Result{Lab: "fwd", Frame: f, Engine: "userspace", Throughput: report.RFC2544Throughput{PPS: 1e6 / float64(f)}}
		for pct := 100; pct >= 50; pct -= 10 {
			r.FrameLoss = append(r.FrameLoss, report.FrameLossStep{PercentOfTop: float64(pct), LossPct: float64(pct - 50)})
		}
		rs = append(rs, r)
	}
	p := filepath.Join(t.TempDir(), "rfc2544.svg")
	if err := RFC2544(p, rs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !bytes.Contains(b, []byte("frame loss rate")) || !bytes.Contains(b, []byte("1518-byte frames")) {
		t.Errorf("the svg lacks the frame loss panel or a frame size's line (%d bytes)", len(b))
	}
}
