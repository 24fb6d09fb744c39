// Package plot draws nslab bench's sweeps and searches as PNG or SVG with
// gonum/plot. Only the nslab-plot helper imports it: its fonts and LaTeX
// tables cost milliseconds of start-up that the nslab command does not
// pay (see docs/design/layout.md).
package plot

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/nslab/nslab/pktgen/measured"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nslab/nslab/pktgen/report"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Sweep draws a sweep: received pps, and Mb/s at L2 and L1, against
// frame size, in two panels; the file's extension (.png or .svg) picks the
// format.
func Sweep(path string, reps []*report.Report) error {
	if len(reps) == 0 {
		return fmt.Errorf("plot: no results")
	}
	var pps, l2, l1 plotter.XYs
	for _, r := range reps {
		pps = append(pps, plotter.XY{X: float64(r.Frame), Y: r.PPS / 1e3})
		l2 = append(l2, plotter.XY{X: float64(r.Frame), Y: r.MbpsL2})
		l1 = append(l1, plotter.XY{X: float64(r.Frame), Y: r.MbpsL1})
	}
	title := fmt.Sprintf("lab %s, traffic %s (%s)", reps[0].Lab, reps[0].Traffic, reps[0].Engine)
	top, err := panel(title, "received kpps", map[string]plotter.XYs{"kpps at the receiver": pps})
	if err != nil {
		return err
	}
	bottom, err := panel("", "Mb/s", map[string]plotter.XYs{"L2 (with FCS)": l2, "L1 (+20 B preamble and gap)": l1})
	if err != nil {
		return err
	}
	return save(path, top, bottom)
}

// Search draws the throughput found per frame size.
func Search(path, labName string, rs []*report.SearchResult) error {
	if len(rs) == 0 {
		return fmt.Errorf("plot: no results")
	}
	var pps, l2 plotter.XYs
	for _, r := range rs {
		pps = append(pps, plotter.XY{X: float64(r.Frame), Y: r.ThroughputPPS / 1e3})
		l2 = append(l2, plotter.XY{X: float64(r.Frame), Y: r.MbpsL2})
	}
	title := fmt.Sprintf("lab %s: throughput (RFC 2544, loss <= %.3f%%, %s)", labName, 100*rs[0].LossAccepted, rs[0].Engine)
	top, err := panel(title, "throughput kpps", map[string]plotter.XYs{"kpps": pps})
	if err != nil {
		return err
	}
	bottom, err := panel("", "Mb/s", map[string]plotter.XYs{"L2 (with FCS)": l2})
	if err != nil {
		return err
	}
	return save(path, top, bottom)
}

func panel(title, ylabel string, lines map[string]plotter.XYs) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "frame size (bytes, with FCS)"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	i := 0
	for _, name := range sortedKeys(lines) {
		lp, pts, err := plotter.NewLinePoints(lines[name])
		if err != nil {
			return nil, err
		}
		lp.Color = plotColors[i%len(plotColors)]
		pts.Color = lp.Color
		pts.Shape = draw.CircleGlyph{}
		p.Add(lp, pts)
		p.Legend.Add(name, lp, pts)
		i++
	}
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs = -vg.Millimeter * 2
	// Room for the last point and the legend.
	p.X.Max *= 1.04
	p.Y.Max *= 1.25
	return p, nil
}

var plotColors = []color.Color{color.RGBA{0x1f, 0x77, 0xb4, 255}, color.RGBA{0xd6, 0x27, 0x28, 255}, color.RGBA{0x2c, 0xa0, 0x2c, 255}, color.RGBA{0xff, 0x7f, 0x0e, 255}, color.RGBA{0x94, 0x67, 0xbd, 255}}

func sortedKeys(m map[string]plotter.XYs) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// save draws the panels one above the other into a PNG or SVG file.
func save(path string, panels ...*plot.Plot) error {
	w, h := 20*vg.Centimeter, 18*vg.Centimeter
	var canvas vg.CanvasWriterTo
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(120))}
	case ".svg":
		canvas = vgsvg.New(w, h)
	default:
		return fmt.Errorf("plot %s: use a .png or .svg file name", path)
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	cs := plot.Align(grid, tiles, dc)
	for i, p := range panels {
		p.Draw(cs[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	defer f.Close()
	if _, err := canvas.WriteTo(f); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// Results are what a results file holds, by kind, in order.
type Results struct {
	Reports  []*report.Report
	Searches []*report.SearchResult
	RFC2544  []*report.RFC2544Result
}

// Read takes results as nslab bench writes them with --out (one JSON
// object per line): measured runs, searches and RFC 2544 benchmarks.
func Read(r io.Reader) (*Results, error) {
	out := &Results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if err := out.add(line); err != nil {
			return nil, fmt.Errorf("results line %d: %w", n, err)
		}
	}
	return out, sc.Err()
}

// add reads one line into its kind.
func (out *Results) add(line []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return err
	}
	switch {
	case probe["back_to_back"] != nil:
		var x report.RFC2544Result
		if err := json.Unmarshal(line, &x); err != nil {
			return err
		}
		out.RFC2544 = append(out.RFC2544, &x)
	case probe["throughput_pps"] != nil:
		var s report.SearchResult
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		out.Searches = append(out.Searches, &s)
	default:
		var rep report.Report
		if err := json.Unmarshal(line, &rep); err != nil {
			return err
		}
		out.Reports = append(out.Reports, &rep)
	}
	return nil
}

// RFC2544 draws RFC 2544's figures: the throughput per frame size, and
// the frame loss rate against the offered load (section 26.3's graph),
// one line per frame size.
func RFC2544(path string, rs []*report.RFC2544Result) error {
	if len(rs) == 0 {
		return fmt.Errorf("plot: no results")
	}
	var tp plotter.XYs
	loss := map[string]plotter.XYs{}
	for _, r := range rs {
		tp = append(tp, plotter.XY{X: float64(r.Frame), Y: r.Throughput.PPS / 1e3})
		name := fmt.Sprintf("%d-byte frames", r.Frame)
		for _, s := range r.FrameLoss {
			loss[name] = append(loss[name], plotter.XY{X: s.PercentOfTop, Y: s.LossPct})
		}
	}
	top, err := panel(fmt.Sprintf("lab %s: RFC 2544 throughput (%s)", rs[0].Lab, rs[0].Engine), "throughput kpps", map[string]plotter.XYs{"kpps": tp})
	if err != nil {
		return err
	}
	bottom, err := panel("frame loss rate (RFC 2544 26.3)", "frame loss %", loss)
	if err != nil {
		return err
	}
	bottom.X.Label.Text = "offered load, % of the top rate"
	return save(path, top, bottom)
}

// LatencyCDF draws the one-way latency's distribution of each report that
// carries a latency histogram (bench --latency): the share of packets at
// or below each latency, latency on a log scale, one line per report
// (frame size, load or mix).
func LatencyCDF(path string, reps []*report.Report) error {
	p := plot.New()
	p.Title.Text = "one-way latency"
	p.X.Label.Text = "latency (µs, log scale)"
	p.Y.Label.Text = "packets at or below it (%)"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 100
	p.Add(plotter.NewGrid())
	n := 0
	drawn := map[string]bool{}
	for _, c := range cdfCurves(reps) {
		if c.once && drawn[c.label] {
			continue // a TCP run's repeat (a variant's next pair): its first stands for it
		}
		drawn[c.label] = true
		h, err := measured.DecodeHistogram(c.histogram)
		if err != nil {
			return fmt.Errorf("plot: the latency histogram of %s: %w", c.label, err)
		}
		var pts plotter.XYs
		for _, b := range h.CumulativeDistribution() {
			if b.ValueAt > 0 {
				pts = append(pts, plotter.XY{X: float64(b.ValueAt) / 1e3, Y: b.Quantile})
			}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotColors[n%len(plotColors)]
		p.Add(line)
		p.Legend.Add(c.label, line)
		n++
	}
	if n == 0 {
		return fmt.Errorf("plot: no report carries a latency histogram (measure with the latency reader on)")
	}
	p.Legend.Top, p.Legend.Left = false, false
	return save(path, p)
}

// cdfCurve is one latency distribution to draw.
type cdfCurve struct {
	label, histogram string
	once             bool // draw the first of this label only
}

// cdfCurves are the reports' latency distributions: a UDP run's, and a
// TCP run's probe idle and under load, each named with its variant.
func cdfCurves(reps []*report.Report) []cdfCurve {
	var out []cdfCurve
	for _, r := range reps {
		v := ""
		if r.Variant != "" {
			v = r.Variant + ": "
		}
		if t := r.TCP; t != nil && t.Latency != nil {
			for _, l := range []struct {
				what string
				lat  *measured.Latency
			}{{"idle", t.Latency.Idle}, {"under load", t.Latency.Loaded}} {
				if l.lat != nil && l.lat.Histogram != "" {
					out = append(out, cdfCurve{v + fmt.Sprintf("%d TCP flows, probe ", len(t.Flows)) + l.what, l.lat.Histogram, true})
				}
			}
			continue
		}
		if r.Latency != nil && r.Latency.Histogram != "" {
			out = append(out, cdfCurve{v + cdfLabel(r), r.Latency.Histogram, false})
		}
	}
	return out
}

// cdfLabel names a report's line.
func cdfLabel(r *report.Report) string {
	switch {
	case r.Load != "":
		return r.Load
	case r.Mix != "":
		return "mix " + r.Mix
	}
	return fmt.Sprintf("%d-byte frames", r.Frame)
}
