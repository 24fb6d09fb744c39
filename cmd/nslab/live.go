package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nslab/nslab/internal/fold"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/deployed"
)

// liveSink publishes a bench's live stream (report.LiveEvent lines): to
// the file or stdout --live names, and always to the lab's live file,
// which nslab top, web and metrics read while the bench runs and after.
// Interval lines come from the samplers' goroutines, so it locks.
type liveSink struct {
	mu    sync.Mutex
	m     *lab.Manager
	lab   string
	ws    []io.Writer
	files []*os.File
	err   error // the first write that failed; later lines are dropped
}

// openLive opens the lab's live file (truncated: one bench's stream) and
// target: "" for none, "-" for stdout, else a file (truncated).
func openLive(m *lab.Manager, labName, target string, stdout io.Writer) (*liveSink, error) {
	s := &liveSink{m: m, lab: labName}
	p := m.LiveFile(labName)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("live file: %w", err)
	}
	paths := []string{p}
	if target != "" && target != "-" {
		paths = append(paths, target)
	}
	for _, path := range paths {
		// O_APPEND: a second bench on the lab truncates the file; this
		// one's lines then still go to its end, never past it (a hole of
		// zeros no reader could parse).
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
		if err != nil {
			_ = s.Close() // nothing written yet; the open's error is the one to give
			return nil, fmt.Errorf("live stream: %w", err)
		}
		s.files, s.ws = append(s.files, f), append(s.ws, f)
	}
	if target == "-" {
		s.ws = append(s.ws, stdout)
	}
	return s, nil
}

// send writes e to every destination.
func (s *liveSink) send(e report.LiveEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Lab, e.PID = s.lab, os.Getpid()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	for _, w := range s.ws {
		if err := report.WriteLive(w, e); err != nil && s.err == nil {
			s.err = err
		}
	}
}

// start announces the bench.
func (s *liveSink) start(req bench.Request) {
	names := req.Traffic.Name
	for i, t := range req.Streams {
		if i > 0 {
			names += "," + t.Name
		}
	}
	s.send(report.LiveEvent{Type: report.LiveStart, Traffic: names})
}

// end closes the stream with what the bench found: each run's verdict,
// the report as a table, and the error that ended it.
func (s *liveSink) end(out *bench.Outcome, err error) {
	e := report.LiveEvent{Type: report.LiveEnd}
	if out != nil {
		for _, r := range out.Reports {
			e.Verdicts = append(e.Verdicts, r.Traffic+": "+r.Bottleneck)
		}
		for _, g := range out.Groups {
			e.Verdicts = append(e.Verdicts, fmt.Sprintf("%d-byte frames together: %s", g.Frame, g.Aggregate.Bottleneck))
		}
		for _, m := range out.MLR {
			e.Verdicts = append(e.Verdicts, fmt.Sprintf("MLRsearch of %d-byte frames, at the top rate: %s", m.Frame, m.Bottleneck))
		}
		if len(out.Reports) > 0 {
			env := out.Reports[0].Env
			e.LabFile, e.LabSHA256, e.NSLab = env.LabFile, env.LabHash, env.NSLab
		}
		var b bytes.Buffer
		f := fold.New(&b, fold.Width)
		if report.WriteOutput(f, "table", &report.Output{Results: out.Results, Summaries: out.Summaries, Comparisons: out.Comparisons}) == nil && f.Flush() == nil {
			e.Report = b.String()
		}
	}
	if err != nil {
		e.Error = err.Error()
	}
	s.send(e)
}

// Close closes the files and returns the first write error. A lab that
// is not deployed (the bench failed before its deploy, or removed the lab
// it deployed) keeps no live file.
func (s *liveSink) Close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	if _, err := s.m.Recorded(s.lab); errors.Is(err, deployed.ErrNotDeployed) {
		p := s.m.LiveFile(s.lab)
		_ = os.Remove(p)               // gone with the lab already, or ours to remove
		_ = os.Remove(filepath.Dir(p)) // only when empty: the lab's logs stay
	}
	return errors.Join(append(errs, s.err)...)
}
