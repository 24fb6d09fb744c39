package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nslab/nslab/pktgen/stats"
)

// History is a directory of runs (bench --history DIR appends each run's
// results as a file of its own, named by its time) and the steps in one
// figure's medians across them, found by stats.Segments.
type History struct {
	Dir      string          `json:"dir"`
	Key      FigureKey       `json:"figure"`
	Runs     []string        `json:"runs"`
	Medians  []float64       `json:"medians"`
	Segments []stats.Segment `json:"segments"`
	// Step is the last change of level, nil when the runs are one level.
	Step *Step `json:"step,omitempty"`
}

// Step is a change of level between two runs.
type Step struct {
	At          int     `json:"at"` // the first run of the new level, 0-based
	Run         string  `json:"run"`
	From        float64 `json:"from"`
	To          float64 `json:"to"`
	ChangePct   float64 `json:"change_pct"`
	Latest      bool    `json:"latest"` // the step is at the newest run
	LowerBetter bool    `json:"lower_is_better"`
}

// AppendHistory writes one run's results lines into dir as a new file
// named by now, and returns its path.
func AppendHistory(dir string, lines []byte, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, now.UTC().Format("20060102T150405.000000000Z")+".jsonl")
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// ReadHistory reads every run in dir, in time order, and finds the steps
// of the figure that decides against a baseline, of the newest run's
// first traffic run and frame.
func ReadHistory(dir string) (*History, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("%s: no runs there (%v)", dir, err)
	}
	slices.Sort(files)
	var runs []*ResultsFile
	for _, f := range files {
		rf, err := ReadResults(f)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rf)
	}
	latest := runs[len(runs)-1]
	k, ok := baselineKey(latest, latest)
	if !ok {
		return nil, fmt.Errorf("the newest run %s has none of the figures %v with two trials or more", latest.Path, BaselineFigures)
	}
	h := &History{Dir: dir, Key: k}
	for _, rf := range runs {
		if v, ok := rf.Figures[k]; ok && len(v) > 0 {
			h.Runs = append(h.Runs, filepath.Base(rf.Path))
			h.Medians = append(h.Medians, stats.Median(v))
		}
	}
	h.Segments = stats.Segments(h.Medians, 0.001)
	if n := len(h.Segments); n > 1 {
		last, prev := h.Segments[n-1], h.Segments[n-2]
		h.Step = &Step{At: last.Start, Run: h.Runs[last.Start], From: prev.Mean, To: last.Mean, ChangePct: pct(last.Mean, prev.Mean),
			Latest: last.Start == len(h.Medians)-1, LowerBetter: LowerIsBetter(k.Figure)}
	}
	return h, nil
}

// Write says the history's levels and its last step.
func (h *History) Write(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("\nhistory %s: %d runs of %s, frame %d, %s (median of each run); levels by change-point analysis (as CSIT's jumpavg):\n", h.Dir, len(h.Runs), h.Key.Traffic, h.Key.Frame, h.Key.Figure)
	for _, s := range h.Segments {
		ew.printf("  runs %d..%d (%s..%s): %.4g ± %.2g\n", s.Start+1, s.End, h.Runs[s.Start], h.Runs[s.End-1], s.Mean, s.SD)
	}
	if s := h.Step; s == nil {
		ew.printf("  no step: one level\n")
	} else {
		worse := (s.ChangePct > 0) == s.LowerBetter
		what := map[bool]string{true: "worse", false: "better"}[worse]
		at := ""
		if s.Latest {
			at = " (at this run)"
		}
		ew.printf("  step at run %d (%s)%s: %.4g -> %.4g, %+.2f%%, %s\n", s.At+1, s.Run, at, s.From, s.To, s.ChangePct, what)
	}
	return ew.err
}
