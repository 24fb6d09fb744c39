package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// baselineOptions are bench's --save-baseline, --baseline and --history:
// the run's results kept, or held to a stored run, or appended to a
// history whose steps are found.
type baselineOptions struct {
	Save, Against, History string
	Margin                 float64 // %
	Force                  bool
	// Set by pairWith: the baseline read; the nodes where its lab file
	// differs from today's when the run measures both pair by pair;
	// sameLab when the files differ in nothing measured.
	base    *report.ResultsFile
	changed []string
	sameLab bool
	// repeatSet: --repeat was given (in a paired run: the most pairs).
	repeatSet bool
}

// baselineVariant is the name of the variant a run held to a baseline
// makes of the baseline's lab file.
const baselineVariant = "baseline"

// defaultBaselineRepeat is how many trials a baseline, and a run held to
// one, take when --repeat does not say.
const defaultBaselineRepeat = 50

// baselineFlags are bench's baseline options.
func baselineFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "save-baseline", Usage: fmt.Sprintf("store this run's figures, each trial, with the lab file's hash, the kernel, the engine, the placement and nslab's version, in `FILE` (--repeat %d unless given)", defaultBaselineRepeat)},
		&cli.StringFlag{Name: "baseline", Usage: "hold this run to the baseline in `FILE`: PASS, FAIL (slower beyond --margin, default 1%) or INCONCLUSIVE, on the router's relative cost where measured; exit 1 on FAIL, 3 on INCONCLUSIVE. Where the baseline's lab file (kept in FILE) differs from this one only in what a variant may change (a firewall rule, sysctls, placement...), both are measured in this run, pair by pair, and the verdict rests on the pairs; refused when the baseline was measured on another lab, kernel, engine or nslab, unless --force"},
		&cli.BoolFlag{Name: "force", Usage: "with --baseline: hold the run to a baseline measured differently (the differences are printed)"},
		&cli.StringFlag{Name: "history", Usage: "append this run's figures to `DIR` (a file per run) and say where the runs' level changed (change-point analysis, as FD.io CSIT's jumpavg)"},
	}
}

// readBaselineOptions reads them, and gives a run that stores or is held
// to a baseline its trials.
func readBaselineOptions(c *cli.Context, repeat *int) (baselineOptions, error) {
	o := baselineOptions{Save: c.String("save-baseline"), Against: c.String("baseline"), History: c.String("history"), Margin: 1, Force: c.Bool("force"), repeatSet: c.IsSet("repeat")}
	if o.Save == "" && o.Against == "" && o.History == "" {
		if c.IsSet("force") {
			return o, cli.Exit("--force is for --baseline", 2)
		}
		return o, nil
	}
	for _, f := range []string{"variants", "search", "search-binary", "rfc2544", "latency-at"} {
		if c.IsSet(f) {
			return o, cli.Exit(fmt.Sprintf("--%s and --save-baseline, --baseline or --history: a baseline holds measured runs' figures; compare variants with --variants alone", f), 2)
		}
	}
	if c.IsSet("margin") && o.Against != "" {
		m, err := parsePercent(c.String("margin"))
		if err != nil {
			return o, cli.Exit("--margin: "+err.Error(), 2)
		}
		o.Margin = 100 * m
	}
	if !c.IsSet("repeat") && (o.Save != "" || o.Against != "") {
		*repeat = defaultBaselineRepeat
	}
	if *repeat < 2 && o.Against != "" {
		return o, cli.Exit("--baseline with --repeat 1: a decision needs the spread of several trials", 2)
	}
	return o, nil
}

// tee makes the run's results also go to buf, for the baseline's use.
func (o baselineOptions) tee(results bench.Results, buf *bytes.Buffer) bench.Results {
	if o.Save == "" && o.Against == "" && o.History == "" {
		return results
	}
	return teeResults{results, buf}
}

// teeResults writes each result to the results file (if any) and to a
// buffer.
type teeResults struct {
	file bench.Results
	buf  *bytes.Buffer
}

func (t teeResults) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if t.file == nil {
		return len(p), nil
	}
	return t.file.Write(p)
}

func (t teeResults) Sync() error {
	if t.file == nil {
		return nil
	}
	return t.file.Sync()
}

// pairWith reads the baseline before the run. When it holds its lab
// file (--save-baseline keeps it) and that differs from today's only
// where a variant reaches (spec.VariantFrom), the run measures it too,
// as variant baseline, pair by pair with today's lab in a duet, and the
// verdict rests on those pairs (a change counts only beyond the margin).
// A file that differs elsewhere is refused unless --force, which holds
// the run to the baseline's figures measured apart.
func (o *baselineOptions) pairWith(req *bench.Request) error {
	if o.Against == "" {
		return nil
	}
	base, err := report.ReadResults(o.Against)
	if err != nil {
		return cli.Exit("--baseline: "+err.Error(), 2)
	}
	o.base = base
	lf := base.LabFile
	if lf == nil || lf.SHA256 == req.Lab.SHA256 {
		return nil
	}
	fv := &bench.FileVariant{Name: baselineVariant, Path: fmt.Sprintf("%s (its copy of %s)", o.Against, lf.Path), Text: []byte(lf.Text)}
	v, err := spec.VariantFrom(req.Lab, fv.Path, fv.Text, fv.Name)
	switch {
	case err != nil && !o.Force:
		return cli.Exit(fmt.Sprintf("--baseline %s was measured on another lab file: %v\n(--force holds this run to its figures all the same, measured apart)", o.Against, err), 2)
	case err != nil:
		return nil
	case v == nil:
		o.sameLab = true
		return nil
	case o.Save != "":
		return cli.Exit(fmt.Sprintf("--save-baseline with --baseline %s, whose lab file differs from this one: this run measures both; save this lab's baseline in a run of its own", o.Against), 2)
	}
	req.Lab.Variants, req.FileVariant = append(req.Lab.Variants, v), fv
	req.Variants = []string{v.Name, spec.BaseVariant}
	switch {
	case !o.repeatSet:
		req.Repeat = 0 // looks at 10, 20 and 40 pairs
	case req.Repeat < 6:
		return cli.Exit(fmt.Sprintf("--repeat %d with --baseline %s, whose lab file differs from this one: the run measures both in pairs, and fewer than 6 cannot reach p < 0.05", req.Repeat, o.Against), 2)
	}
	req.Margin = o.Margin / 100
	req.Duet, req.DuetAuto = true, true
	o.changed = v.Nodes
	return nil
}

// after stores, holds or appends the run's results (lines, as --out
// writes them; a baseline keeps lab's file beside them), and returns the
// verdict and the history for the output.
func (o *baselineOptions) after(w io.Writer, out *bench.Outcome, lines []byte, lab *spec.Lab) (*report.BaselineVerdict, *report.History, error) {
	if o.Save != "" {
		if err := saveBaseline(o.Save, lines, lab); err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(w, "baseline saved to %s (%d results, and the lab file)\n", o.Save, bytes.Count(lines, []byte("\n")))
	}
	var h *report.History
	if o.History != "" {
		if _, err := report.AppendHistory(o.History, lines, time.Now()); err != nil {
			return nil, nil, &bench.FieldError{Field: "history", Err: err}
		}
		var err error
		if h, err = report.ReadHistory(o.History); err != nil {
			return nil, nil, &bench.FieldError{Field: "history", Err: err}
		}
	}
	switch {
	case o.Against == "":
		return nil, h, nil
	case o.changed != nil:
		if len(out.Comparisons) == 0 {
			return nil, h, fmt.Errorf("--baseline %s: the run compared nothing", o.Against)
		}
		v, err := report.PairedVerdict(o.base, out.Comparisons[0], o.Margin, o.changed)
		return v, h, err
	}
	v, err := o.hold(lines)
	return v, h, err
}

// saveBaseline writes a baseline: the run's result lines, then the lab
// file they measured.
func saveBaseline(path string, lines []byte, lab *spec.Lab) error {
	rec, err := json.Marshal(struct {
		LabFile report.LabFile `json:"lab_file"`
	}{report.LabFile{Path: lab.File, SHA256: lab.SHA256, Text: string(lab.Source)}})
	if err != nil {
		return err
	}
	data := append(append(slices.Clone(lines), rec...), '\n')
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("--save-baseline: %w", err)
	}
	return nil
}

// hold holds today's results to the baseline, measured apart.
func (o *baselineOptions) hold(lines []byte) (*report.BaselineVerdict, error) {
	base := o.base
	today := report.NewResultsFile("this run", false)
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<28)
	for sc.Scan() {
		if err := today.AddLine(sc.Bytes()); err != nil {
			return nil, err
		}
	}
	if o.sameLab { // the files differ in tests:, expect: or variants: only
		today.Env["lab sha256"] = base.Env["lab sha256"]
	}
	v, err := report.AgainstBaseline(base, today, o.Margin, o.Force)
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %w (--force holds the run to it all the same)", o.Against, err)
	}
	return v, nil
}

// verdictExit is the exit of a run held to a baseline: 1 on FAIL, 3 on
// INCONCLUSIVE (said in the output above).
func verdictExit(v *report.BaselineVerdict) error {
	switch {
	case v == nil:
		return nil
	case v.Verdict == report.Fail:
		return cli.Exit("", 1)
	case v.Verdict == report.Inconclusive:
		return cli.Exit("", 3)
	}
	return nil
}
