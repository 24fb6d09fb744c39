package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/urfave/cli/v2"
)

// baselineOptions are bench's --save-baseline, --baseline and --history:
// the run's results kept, or held to a stored run, or appended to a
// history whose steps are found.
type baselineOptions struct {
	Save, Against, History string
	Margin                 float64 // %
	Force                  bool
}

// defaultBaselineRepeat is how many trials a baseline, and a run held to
// one, take when --repeat does not say.
const defaultBaselineRepeat = 50

// baselineFlags are bench's baseline options.
func baselineFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "save-baseline", Usage: fmt.Sprintf("store this run's figures, each trial, with the lab file's hash, the kernel, the engine, the placement and nslab's version, in `FILE` (--repeat %d unless given)", defaultBaselineRepeat)},
		&cli.StringFlag{Name: "baseline", Usage: "hold this run to the baseline in `FILE`: PASS, FAIL (slower beyond --margin, default 1%) or INCONCLUSIVE, on the router's relative cost where measured; exit 1 on FAIL, 3 on INCONCLUSIVE; refused when the baseline was measured on another lab file, kernel, engine or nslab, unless --force"},
		&cli.BoolFlag{Name: "force", Usage: "with --baseline: hold the run to a baseline measured differently (the differences are printed)"},
		&cli.StringFlag{Name: "history", Usage: "append this run's figures to `DIR` (a file per run) and say where the runs' level changed (change-point analysis, as FD.io CSIT's jumpavg)"},
	}
}

// readBaselineOptions reads them, and gives a run that stores or is held
// to a baseline its trials.
func readBaselineOptions(c *cli.Context, repeat *int) (baselineOptions, error) {
	o := baselineOptions{Save: c.String("save-baseline"), Against: c.String("baseline"), History: c.String("history"), Margin: 1, Force: c.Bool("force")}
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

// after stores, holds or appends the run's results (lines, as --out
// writes them), and returns the verdict and the history for the output.
func (o baselineOptions) after(w io.Writer, lines []byte) (*report.BaselineVerdict, *report.History, error) {
	if o.Save != "" {
		if err := os.WriteFile(o.Save, lines, 0o644); err != nil {
			return nil, nil, fmt.Errorf("--save-baseline: %w", err)
		}
		fmt.Fprintf(w, "baseline saved to %s (%d results)\n", o.Save, bytes.Count(lines, []byte("\n")))
	}
	var h *report.History
	if o.History != "" {
		if _, err := report.AppendHistory(o.History, lines, time.Now()); err != nil {
			return nil, nil, err
		}
		var err error
		if h, err = report.ReadHistory(o.History); err != nil {
			return nil, nil, err
		}
	}
	if o.Against == "" {
		return nil, h, nil
	}
	v, err := o.hold(lines)
	return v, h, err
}

// hold holds today's results to the baseline.
func (o baselineOptions) hold(lines []byte) (*report.BaselineVerdict, error) {
	base, err := report.ReadResults(o.Against)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	today := report.NewResultsFile("this run", false)
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<28)
	for sc.Scan() {
		if err := today.AddLine(sc.Bytes()); err != nil {
			return nil, err
		}
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
