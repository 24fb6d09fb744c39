package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Output is everything one bench invocation prints: its results, and,
// over repeated rounds, each figure's summary and the comparisons of
// variants.
type Output struct {
	Results
	Summaries   []FigureSummary
	Comparisons []*Comparison
	// Control is the positive control the run measured (bench
	// --check-sensitivity), nil when it measured none.
	Control *Control
	// Baseline is the run held to a baseline (bench --baseline), History
	// the runs it was appended to (bench --history); nil when not asked.
	Baseline *BaselineVerdict
	History  *History
}

// WriteOutput is the one writer of bench output: it picks the format,
// and each result type renders itself in it (json: one document; csv,
// markdown, table). In JSON, results of one kind are a list of them; with
// summaries, an object {results, summaries, comparisons}.
func WriteOutput(w io.Writer, format string, o *Output) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(o.Summaries) > 0 || len(o.Comparisons) > 0 || o.Baseline != nil || o.History != nil {
			doc := map[string]any{"results": o.results(), "summaries": o.Summaries, "comparisons": o.Comparisons}
			if o.Control != nil {
				doc["positive_control"] = o.Control
			}
			if o.Baseline != nil {
				doc["baseline"] = o.Baseline
			}
			if o.History != nil {
				doc["history"] = o.History
			}
			return enc.Encode(doc)
		}
		if len(o.RFC2544)+len(o.MLR)+len(o.Searches) == 0 {
			return o.writeResults(w, format) // runs and groups: their writers' JSON
		}
		return enc.Encode(o.results())
	}
	if len(o.Comparisons) > 0 && format != "csv" {
		// A comparison's trials are many: its figures, summaries and
		// decision say what they found; each trial is in the JSON and in
		// the results file.
		if _, err := fmt.Fprintf(w, "%d trials (each in the JSON format and in the results file)\n\n", o.trials()); err != nil {
			return err
		}
	} else if err := o.writeResults(w, format); err != nil {
		return err
	}
	if err := writeSummaries(w, format, o.Summaries); err != nil {
		return err
	}
	for _, c := range o.Comparisons {
		if err := c.write(w, format); err != nil {
			return err
		}
	}
	if format == "csv" {
		return nil
	}
	return o.writeAfter(w)
}

// writeAfter writes what the output says after its results: the
// positive control, the history, the baseline's verdict.
func (o *Output) writeAfter(w io.Writer) error {
	if c := o.Control; c != nil {
		if _, err := fmt.Fprintf(w, "\npositive control: %s\n", c.Sentence); err != nil {
			return err
		}
	}
	if o.History != nil {
		if err := o.History.Write(w); err != nil {
			return err
		}
	}
	if o.Baseline != nil {
		return o.Baseline.Write(w)
	}
	return nil
}

// trials is how many results the output holds.
func (o *Output) trials() int {
	return len(o.Reports) + len(o.Groups) + len(o.Searches) + len(o.MLR) + len(o.RFC2544)
}

// results are the output's results of its one kind (a run gives one).
func (o *Output) results() any {
	switch {
	case len(o.RFC2544) > 0:
		return o.RFC2544
	case len(o.MLR) > 0:
		return o.MLR
	case len(o.Searches) > 0:
		return o.Searches
	case len(o.Groups) > 0:
		return o.Groups
	}
	return o.Reports
}

// writeResults renders the results in a text format.
func (o *Output) writeResults(w io.Writer, format string) error {
	switch {
	case format == "csv" && (len(o.RFC2544) > 0 || len(o.MLR) > 0 || len(o.Searches) > 0):
		return o.figuresCSV(w)
	case len(o.RFC2544) > 0:
		return WriteRFC2544(w, format, o.RFC2544)
	case len(o.MLR) > 0:
		return writeMLR(w, format, o.MLR)
	case len(o.Searches) > 0:
		return writeSearch(w, format, o.Searches)
	case len(o.Groups) > 0:
		return WriteGroups(w, format, o.Groups)
	}
	return Write(w, format, o.Reports)
}

// figuresCSV is the CSV of searches and RFC 2544 benchmarks: a row per
// figure, as compare and the summaries name them.
func (o *Output) figuresCSV(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("traffic,variant,frame,figure,value\n")
	row := func(traffic, variant string, frame int, f figures) {
		names := make([]string, 0, len(f))
		for k := range f {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ew.printf("%s,%s,%d,%q,%g\n", traffic, variant, frame, k, f[k])
		}
	}
	for _, r := range o.RFC2544 {
		row(r.Traffic, r.Variant, r.Frame, rfc2544Figures(r))
	}
	for _, m := range o.MLR {
		row(m.Traffic, m.Variant, m.Frame, mlrFigures(m))
	}
	for _, s := range o.Searches {
		row(s.Traffic, s.Variant, s.Frame, figures{"throughput_pps": s.ThroughputPPS})
	}
	return ew.err
}

// writeSummaries renders the summaries of repeated rounds (csv: a row
// each).
func writeSummaries(w io.Writer, format string, sums []FigureSummary) error {
	if len(sums) == 0 {
		return nil
	}
	if format == "csv" {
		ew := &errWriter{w: w}
		ew.printf("traffic,frame,figure,n,median,min,max,ci_low,ci_high,ci_level,ci_method\n")
		for _, s := range sums {
			ew.printf("%q,%d,%q,%d,%g,%g,%g,%g,%g,%g,%q\n", s.Traffic, s.Frame, s.Figure, s.N, s.Median, s.Min, s.Max, s.CILow, s.CIHigh, s.CILevel, s.CIMethod)
		}
		return ew.err
	}
	t := newTabular(w, format)
	t.section(fmt.Sprintf("over %d rounds, interleaved (median, min..max, and an interval of the median by %s):", sums[0].N, sums[0].CIMethod))
	t.header("traffic", "frame", "figure", "median", "min..max", "interval", "coverage")
	for _, s := range sums {
		t.row(s.Traffic, fmt.Sprint(s.Frame), s.Figure, fmt.Sprintf("%.6g", s.Median), fmt.Sprintf("%.6g..%.6g", s.Min, s.Max),
			fmt.Sprintf("[%.6g, %.6g]", s.CILow, s.CIHigh), fmt.Sprintf("%.1f%%", 100*s.CILevel))
	}
	return t.done()
}
