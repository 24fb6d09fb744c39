package bench

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/nslab/nslab/internal/units"

	"github.com/nslab/nslab/topology/frame"
	"github.com/nslab/nslab/topology/spec"
)

// Selection picks a traffic run and changes it, as nslab bench's options
// do. Zero fields change nothing.
type Selection struct {
	Name     string // a run of the file; "" (and no From): the file's first
	From     string // a run not in the file: the sender, node:interface
	To       string // with From: the destination address
	Duration time.Duration
	Count    uint64
	Frames   []int
	Rate     string // max, 200kpps, 500Mbit (see units.ParseRate)
	Threads  int
	CPUs     string // the sender threads' CPUs, e.g. "0" or "0-1"
	Engine   string
}

// Streams returns the runs the names select (runs, or groups of runs; the
// file's first run when there are none), each with the selection's
// changes and checked as Traffic checks one. Runs measured together sweep
// the same frame sizes.
func Streams(l *spec.Lab, names []string, sel Selection) ([]*spec.Traffic, error) {
	if len(names) == 0 || sel.From != "" {
		if len(names) > 1 {
			return nil, errors.New("a run given by its from and to is one run: name no traffic runs with it, or leave from and to out")
		}
		t, err := Traffic(l, sel)
		return []*spec.Traffic{t}, err
	}
	var out []*spec.Traffic
	seen := map[string]bool{}
	for _, name := range names {
		runs := l.Runs(name)
		if len(runs) == 0 {
			return nil, fmt.Errorf("%s has %s", l.File, l.NoRun(name))
		}
		for _, r := range runs {
			if seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			s := sel
			s.Name = r.Name
			t, err := Traffic(l, s)
			if err != nil {
				return nil, err
			}
			if u := firstUDPRun(out); u != nil && t.TCP == nil && fmt.Sprint(t.Frames) != fmt.Sprint(u.Frames) { // a TCP run has no frame size
				return nil, fmt.Errorf("runs measured together sweep the same frame sizes: %s has %v, %s %v; give one frame size for all", u.Name, u.Frames, t.Name, t.Frames)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// DefaultDuration is the length of a run given on the command line.
const DefaultDuration = 10 * time.Second

// Traffic returns the run sel picks, with its changes, checked against the
// lab as the file's own runs are: nothing is deployed for a run that
// cannot be sound.
func Traffic(l *spec.Lab, sel Selection) (*spec.Traffic, error) {
	t, err := pick(l, sel)
	if err != nil {
		return nil, err
	}
	if err := sel.apply(t); err != nil {
		return nil, err
	}
	if err := l.CheckTraffic(t); err != nil {
		return nil, err
	}
	return t, nil
}

// pick finds the run, or makes one from From and To, as a copy.
func pick(l *spec.Lab, sel Selection) (*spec.Traffic, error) {
	if sel.From != "" || sel.To != "" {
		from, err := spec.ParseInterface(sel.From)
		if err != nil {
			return nil, &FieldError{"from", err}
		}
		to, err := netip.ParseAddr(sel.To)
		if err != nil {
			return nil, &FieldError{"to", fmt.Errorf("%q: want the destination address, e.g. 10.0.2.1", sel.To)}
		}
		return &spec.Traffic{Name: "command-line", From: from, To: to, Frames: []int{max(spec.DefaultFrame, frame.Min(to.Is6()))}, Threads: 1,
			Engine: spec.DefaultEngine, Duration: DefaultDuration}, nil
	}
	if len(l.Traffic) == 0 {
		return nil, fmt.Errorf("%s has no traffic: section: add a run (see examples/client-router-server.yaml) or give a run's from and to", l.File)
	}
	t := l.Traffic[0]
	if sel.Name != "" {
		if t = l.TrafficRun(sel.Name); t == nil {
			return nil, fmt.Errorf("%s has %s", l.File, l.NoRun(sel.Name))
		}
	}
	cp := *t
	return &cp, nil
}

// apply makes the selection's changes to t.
func (sel Selection) apply(t *spec.Traffic) error {
	if sel.Rate != "" {
		pps, mbps, err := units.ParseRate(sel.Rate)
		if err != nil {
			return &FieldError{"rate", err}
		}
		t.RatePPS, t.RateMbps = pps, mbps
	}
	if sel.Threads > 0 {
		t.Threads, t.CPUs = sel.Threads, nil
	}
	if sel.CPUs != "" {
		set, err := spec.ParseCPUList(sel.CPUs)
		if err != nil {
			return &FieldError{"cpus", err}
		}
		if sel.Threads > 0 && sel.Threads != len(set) {
			return &FieldError{"cpus", fmt.Errorf("%s names %d CPU(s) but threads is %d: one thread runs per CPU", set, len(set), sel.Threads)}
		}
		t.CPUs, t.Threads = set, len(set)
	}
	if sel.Duration > 0 {
		t.Duration, t.Count = sel.Duration, 0
	}
	if sel.Count > 0 {
		t.Count, t.Duration = sel.Count, 0
	}
	if len(sel.Frames) > 0 {
		t.Frames = sel.Frames
	}
	if sel.Engine != "" {
		t.Engine = sel.Engine
	}
	return nil
}
