package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/nslab/nslab/pktgen/stats"
)

// Significance is the p-value below which a difference is called
// significant (benchstat's alpha).
const Significance = 0.05

// ResultsFile is what one results file holds: its figures by traffic run,
// frame and figure, and the environment of its runs.
type ResultsFile struct {
	Path    string
	Figures map[FigureKey][]float64
	// Blocks is, beside each of Figures' values, the block of trials it
	// was measured in (bench --variants: "RUN/BLOCK"), "" for a value
	// measured apart: values of two files in one block are a pair.
	Blocks map[FigureKey][]string
	Env    map[string]string // what must match between files: lab sha256, kernel, engine, placement, nslab
	// OneVariant: the file holds one variant's results (bench
	// --variants compares such files), so its figures are named without
	// the variant; otherwise each variant's are apart.
	OneVariant bool
	// LabFile is the lab file the results were measured on, where the
	// file holds it (bench --save-baseline keeps it).
	LabFile *LabFile
}

// LabFile is a baseline's copy of the lab file it measured: a run held to
// the baseline measures it again, pair by pair with its own, where the
// two differ only in what a variant may change.
type LabFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Text   string `json:"text"`
}

// FigureKey names one figure of one traffic run at one frame size.
type FigureKey struct {
	Traffic, Figure string
	Frame           int
}

// ReadResults reads a results file: one JSON result per line (a run, an
// MLRsearch or a binary search), as bench --out writes them.
func ReadResults(path string) (*ResultsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	rf := NewResultsFile(path, false)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<28)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		if err := rf.AddLine(sc.Bytes()); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rf.Figures) == 0 {
		return nil, fmt.Errorf("%s holds no results (a results file is the JSON lines of bench's output)", path)
	}
	return rf, nil
}

// ReadVariants reads a results file that holds several variants'
// results (bench --variants --out): one ResultsFile per variant, in the
// order the file first names them, each named "PATH (variant V)".
func ReadVariants(path string) ([]*ResultsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var out []*ResultsFile
	byName := map[string]*ResultsFile{}
	for n, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var probe struct {
			Variant string          `json:"variant"`
			LabFile json.RawMessage `json:"lab_file"`
		}
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON result: %w", path, n+1, err)
		}
		if probe.LabFile != nil {
			continue // a baseline's copy of its lab file: no variant's result
		}
		rf := byName[probe.Variant]
		if rf == nil {
			rf = NewResultsFile(path+variantSuffix(probe.Variant), true)
			byName[probe.Variant] = rf
			out = append(out, rf)
		}
		if err := rf.AddLine([]byte(line)); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
	}
	return out, nil
}

// NewResultsFile is an empty results file named path (oneVariant: see
// ResultsFile.OneVariant).
func NewResultsFile(path string, oneVariant bool) *ResultsFile {
	return &ResultsFile{Path: path, Figures: map[FigureKey][]float64{}, Blocks: map[FigureKey][]string{}, Env: map[string]string{}, OneVariant: oneVariant}
}

// AddLine adds one result.
func (rf *ResultsFile) AddLine(line []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return fmt.Errorf("not a JSON result: %w", err)
	}
	block := ""
	if b := probe["block"]; b != nil {
		_ = json.Unmarshal(b, &block) // not a string: measured apart
	}
	add := func(traffic string, frame int, f figures) {
		for name, v := range f {
			k := FigureKey{Traffic: traffic, Frame: frame, Figure: name}
			rf.Figures[k] = append(rf.Figures[k], v)
			rf.Blocks[k] = append(rf.Blocks[k], block)
		}
	}
	switch {
	case probe["lab_file"] != nil:
		var l struct {
			LabFile *LabFile `json:"lab_file"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		rf.LabFile = l.LabFile
	case probe["back_to_back"] != nil:
		var r RFC2544Result
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		add(r.Traffic+rf.variant(r.Variant)+" (RFC 2544)", r.Frame, rfc2544Figures(&r))
		if r.Latency != nil {
			rf.noteEnv(r.Latency.Env)
		}
	case probe["draft"] != nil:
		var m MLRResult
		if err := json.Unmarshal(line, &m); err != nil {
			return err
		}
		add(m.Traffic+rf.variant(m.Variant), m.Frame, mlrFigures(&m))
		if len(m.Trials) > 0 && m.Trials[0].Report != nil {
			rf.noteEnv(m.Trials[0].Report.Env)
		}
	case probe["hops"] != nil:
		var r Report
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		add(r.Traffic+rf.variant(r.Variant)+r.loadSuffix(), r.Frame, runFigures(&r))
		rf.noteEnv(r.Env)
	case probe["throughput_pps"] != nil:
		var s SearchResult
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		add(s.Traffic+rf.variant(s.Variant), s.Frame, figures{"throughput_pps": s.ThroughputPPS})
		rf.Env["engine"] = s.Engine
	default:
		return errors.New("neither a run, an MLRsearch, a search nor RFC 2544 benchmarks")
	}
	return nil
}

// variant is how a figure's name says its variant (nothing in a file of
// one variant's results).
func (rf *ResultsFile) variant(v string) string {
	if rf.OneVariant {
		return ""
	}
	return variantSuffix(v)
}

// noteEnv records what must match, first seen wins; a second value is
// kept too, so that a file that mixes them is reported.
func (rf *ResultsFile) noteEnv(e Env) {
	for k, v := range map[string]string{"lab sha256": e.LabHash, "kernel": e.Kernel, "engine": e.Engine, "placement": strings.Join(e.Placement, "; "), "nslab version": e.NSLab} {
		if old, ok := rf.Env[k]; !ok {
			rf.Env[k] = v
		} else if old != v && !strings.Contains(old, " | ") {
			rf.Env[k] = old + " | " + v
		}
	}
}

// Differences names what differs between two files' environments.
func Differences(a, b *ResultsFile) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		if a.Env[k] != b.Env[k] {
			out = append(out, fmt.Sprintf("%s: %q in %s, %q in %s", k, a.Env[k], a.Path, b.Env[k], b.Path))
		}
	}
	return out
}

// Change is one figure compared.
type Change struct {
	Traffic string  `json:"traffic"`
	Frame   int     `json:"frame"`
	Figure  string  `json:"figure"`
	OldN    int     `json:"old_n"`
	NewN    int     `json:"new_n"`
	Old     float64 `json:"old_median"`
	New     float64 `json:"new_median"`
	// ChangePct is the new median against the old, in percent; its
	// interval is the bootstrap's 95% percentile interval of that ratio.
	ChangePct  float64 `json:"change_pct"`
	ChangeLow  float64 `json:"change_ci_low_pct"`
	ChangeHigh float64 `json:"change_ci_high_pct"`
	// Undefined: the old median is 0 and the new is not (no ratio).
	Undefined   bool    `json:"change_undefined,omitempty"`
	P           float64 `json:"p_value"`
	Significant bool    `json:"significant"`
	// Pairs is how many blocks both files measured the figure in: with 6
	// or more (and values above 0), the change is paired (see paired.go).
	Pairs  int  `json:"pairs,omitempty"`
	Paired bool `json:"paired"`
	// ZeroOld and ZeroNew are the trials (1-based, in the order measured)
	// whose figure was 0 or none: an outage or a failed trial. They are
	// never dropped: a decision on this figure cannot be made past them
	// (Comparison.Decide says cannot tell, naming them).
	ZeroOld []int `json:"zero_trials_old,omitempty"`
	ZeroNew []int `json:"zero_trials_new,omitempty"`
	// logRatios are the pairs' log(new/old), for a decision.
	logRatios []float64
}

// Comparison is every figure two files share, compared.
type Comparison struct {
	Old, New string
	// Details asks the table for its long forms (how each decision was
	// made); JSON and markdown always carry them.
	Details bool     `json:"-"`
	Method  string   `json:"method"`
	Changes []Change `json:"changes"`
	Ignored []string `json:"environment_differences,omitempty"` // differences the caller chose to ignore
	// Decision is the answer on the comparison's main figure (Decide);
	// nil before one is made.
	Decision *Decision `json:"comparison,omitempty"`
}

// MismatchError says that two results files were measured differently
// (see Differences), so Compare refused them.
type MismatchError struct{ Differences []string }

func (e *MismatchError) Error() string {
	return "the results were measured differently, so their difference would not be the change alone:\n  " + strings.Join(e.Differences, "\n  ")
}

// Compare compares b against a, figure by figure. It refuses files whose
// environments differ (lab, kernel, engine, placement, nslab), naming
// what differs, unless force.
func Compare(a, b *ResultsFile, force bool) (*Comparison, error) {
	diff := Differences(a, b)
	if len(diff) > 0 && !force {
		return nil, &MismatchError{Differences: diff}
	}
	c := &Comparison{Old: a.Path, New: b.Path, Ignored: diff, Method: unpairedMethod}
	for k, old := range a.Figures {
		cur, ok := b.Figures[k]
		if !ok {
			continue
		}
		ch := Change{Traffic: k.Traffic, Frame: k.Frame, Figure: k.Figure, OldN: len(old), NewN: len(cur),
			Old: stats.Median(old), New: stats.Median(cur), ZeroOld: ZeroTrials(old), ZeroNew: ZeroTrials(cur)}
		if d := logRatios(a, b, k); len(d) >= minPairs {
			ch.pairedChange(d)
			c.Method = pairedMethod
		} else {
			ch.unpairedChange(old, cur)
		}
		c.Changes = append(c.Changes, ch)
	}
	sort.Slice(c.Changes, func(i, j int) bool {
		x, y := c.Changes[i], c.Changes[j]
		if x.Traffic != y.Traffic {
			return x.Traffic < y.Traffic
		}
		if x.Frame != y.Frame {
			return x.Frame < y.Frame
		}
		return x.Figure < y.Figure
	})
	if len(c.Changes) == 0 {
		return nil, fmt.Errorf("%s and %s share no traffic run, frame size and figure", a.Path, b.Path)
	}
	return c, nil
}

// ZeroTrials are the trials (1-based) of x whose figure is 0, negative or
// not a number: an outage, or a trial that measured nothing.
func ZeroTrials(x []float64) []int {
	var out []int
	for i, v := range x {
		if !(v > 0) {
			out = append(out, i+1)
		}
	}
	return out
}

// trialList names trials: "3, 17 and 22 of 50", or "1 to 50 (all 50)".
func trialList(trials []int, of int) string {
	if len(trials) == of && of > 2 {
		return fmt.Sprintf("1 to %d (all %d)", of, of)
	}
	w := make([]string, len(trials))
	for i, t := range trials {
		w[i] = strconv.Itoa(t)
	}
	s := strings.Join(w, ", ")
	if len(w) > 1 {
		s = strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
	}
	return fmt.Sprintf("%s of %d", s, of)
}

// unpairedChange is the change of medians of values measured apart: a
// bootstrap interval of the ratio of medians, and the Mann-Whitney U
// test.
func (ch *Change) unpairedChange(old, cur []float64) {
	ch.ChangePct = pct(ch.New, ch.Old)
	ch.ChangeLow, ch.ChangeHigh = bootstrapChange(old, cur)
	if math.IsNaN(ch.ChangePct) {
		ch.ChangePct, ch.Undefined = 0, ch.New != 0
	}
	if ch.Undefined || math.IsNaN(ch.ChangeLow) || math.IsNaN(ch.ChangeHigh) { // no ratio to 0: the resamples' intervals would mean nothing
		ch.ChangeLow, ch.ChangeHigh = ch.ChangePct, ch.ChangePct
	}
	_, ch.P = stats.MannWhitney(old, cur)
	ch.Significant = ch.P < Significance
}

// pct is new against old in percent; NaN when old is 0 (0 against 0
// included: the callers say so).
func pct(new, old float64) float64 {
	if old == 0 {
		return math.NaN()
	}
	return 100 * (new/old - 1)
}

// bootstrapChange is the 95% percentile interval of the change of the
// median, from 10000 resamples of both (a fixed seed: the same files give
// the same interval).
func bootstrapChange(old, cur []float64) (float64, float64) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 10000
	changes := make([]float64, 0, n)
	resample := func(x []float64) float64 {
		s := make([]float64, len(x))
		for i := range s {
			s[i] = x[rng.IntN(len(x))]
		}
		return stats.Median(s)
	}
	for range n {
		if c := pct(resample(cur), resample(old)); !math.IsNaN(c) && !math.IsInf(c, 0) {
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 {
		return math.NaN(), math.NaN()
	}
	return percentile95(changes)
}

// percentile95 is the 2.5th and 97.5th percentiles of x (not empty),
// which it sorts.
func percentile95(x []float64) (float64, float64) {
	sort.Float64s(x)
	return x[len(x)*25/1000], x[max(0, len(x)*975/1000-1)]
}

// write is Write after a line that says what is compared (bench
// --variants prints each comparison so).
func (c *Comparison) write(w io.Writer, format string) error {
	if format != "csv" {
		if _, err := fmt.Fprintf(w, "\n%s against %s:\n", c.New, c.Old); err != nil {
			return err
		}
	}
	return c.Write(w, format)
}

// decisionLines are the decision, how it was made and the smallest
// change it could have seen, each line between pre and post.
func (c *Comparison) decisionLines(ew *errWriter, pre, post string) {
	d := c.Decision
	if d == nil {
		return
	}
	size := fmt.Sprintf("%d bytes", d.Frame)
	if d.Frame == 0 {
		size = "TCP flows" // a TCP run has no frame size
	}
	// The decision, and on a line of its own the figures it rests on.
	said, why, cut := strings.Cut(d.Decision, " (")
	ew.printf("%sdecision on %s (traffic %s, %s): %s%s\n", pre, d.Figure, d.Traffic, size, said, post)
	if cut {
		ew.printf("  (%s\n", why)
	}
	ew.printf("  %d pairs", d.Pairs)
	if d.Look > 0 {
		ew.printf(", decided at look %d", d.Look)
	}
	ew.printf("; p %.3g", d.P)
	ew.detailf("; how: %s", d.Method)
	ew.printf("\n")
	if d.PairSD > 0 {
		ew.printf("  bootstrap interval of the median pair: %+.2f%% .. %+.2f%%; one pair spreads %.2f%%\n", d.BootstrapLow, d.BootstrapHigh, d.PairSD)
		ew.printf("  the smallest change these pairs detect (90%% power): %.2f%%\n", d.MDE)
	}
	for _, l := range []struct{ label, text string }{{"set-up", d.Setup}, {"figure", d.FigureReason}, {"can it move", d.Validity}} {
		if l.text != "" {
			ew.printf("  %s: %s\n", l.label, l.text)
		}
	}
	if c := d.Control; c != nil {
		ew.printf("  positive control: %s\n", c.Sentence)
	}
	if f := d.FullLoad; f != nil {
		ew.printf("  at full load, as information: %s (%d pairs)\n", f.Decision, f.Pairs)
	}
}

// Write writes the comparison as a table, JSON, CSV or markdown.
func (c *Comparison) Write(w io.Writer, format string) error {
	switch format {
	case "csv":
		ew := &errWriter{w: w}
		ew.printf("old,new,traffic,frame,figure,old_n,new_n,old_median,new_median,change_pct,change_ci_low_pct,change_ci_high_pct,p_value,significant,paired,pairs,decision,margin_pct,mde_pct\n")
		for _, x := range c.Changes {
			ew.printf("%q,%q,%q,%d,%q,%d,%d,%g,%g,%.4f,%.4f,%.4f,%.4g,%v,%v,%d", c.Old, c.New, x.Traffic, x.Frame, x.Figure, x.OldN, x.NewN, x.Old, x.New, x.ChangePct, x.ChangeLow, x.ChangeHigh, x.P, x.Significant, x.Paired, x.Pairs)
			if d := c.Decision; d != nil && d.Traffic == x.Traffic && d.Frame == x.Frame && d.Figure == x.Figure {
				ew.printf(",%q,%g,%.4f\n", d.Outcome, d.Margin, d.MDE)
			} else {
				ew.printf(",,,\n")
			}
		}
		return ew.err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	case "markdown":
		ew := &errWriter{w: w, details: true}
		c.decisionLines(ew, "**", "**")
		ew.printf("| traffic | frame | figure | old | new | change | 95%% interval | p | significant |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, x := range c.Changes {
			ew.printf("| %s | %d | %s | %.6g | %.6g | %+.2f%% | %+.2f%% .. %+.2f%% | %.3g | %v |\n", x.Traffic, x.Frame, x.Figure, x.Old, x.New, x.ChangePct, x.ChangeLow, x.ChangeHigh, x.P, x.Significant)
		}
		return ew.err
	case "table", "":
		ew := &errWriter{w: w, details: c.Details}
		ew.printf("old: %s\nnew: %s\n", c.Old, c.New)
		ew.detailf("%s; ", c.Method)
		ew.printf("significant: p < %g\n", Significance)
		c.decisionLines(ew, "", "")
		for _, d := range c.Ignored {
			ew.printf("ignored (forced): %s\n", d)
		}
		c.changesTable(ew)
		return ew.err
	}
	return CheckFormat(format)
}

// changesTable writes the figures' changes, a row each. When every change
// is of one traffic and one frame size, they are said once above the
// table rather than in two columns of every row, so that a row fits in
// 120 characters.
func (c *Comparison) changesTable(ew *errWriter) {
	traffics, frames := map[string]bool{}, map[int]bool{}
	for _, x := range c.Changes {
		traffics[x.Traffic], frames[x.Frame] = true, true
	}
	one := len(traffics) == 1 && len(frames) == 1
	ew.printf("\n")
	if one && len(c.Changes) > 0 {
		if x := c.Changes[0]; x.Frame > 0 {
			ew.printf("traffic %s, %d-byte frames:\n", x.Traffic, x.Frame)
		} else { // TCP flows have no frame size
			ew.printf("traffic %s:\n", x.Traffic)
		}
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "figure\told\tnew\tn\tchange\t95% interval\tp\t"
	if !one {
		head = "traffic\tframe\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, x := range c.Changes {
		verdict := "not significant"
		if x.Significant {
			verdict = "significant"
		}
		n := fmt.Sprintf("n=%d", x.OldN)
		switch {
		case x.Paired:
			n = fmt.Sprintf("%d pairs", x.Pairs)
		case x.OldN != x.NewN:
			n = fmt.Sprintf("n=%d/%d", x.OldN, x.NewN)
		}
		change, interval := fmt.Sprintf("%+.2f%%", x.ChangePct), fmt.Sprintf("%+.2f%% .. %+.2f%%", x.ChangeLow, x.ChangeHigh)
		if x.Undefined {
			change, interval = "n/a", "(old median 0)"
		}
		row := fmt.Sprintf("%s\t%.6g\t%.6g\t%s\t%s\t%s\t%.3g\t  %s", x.Figure, x.Old, x.New, n, change, interval, x.P, verdict)
		if !one {
			row = fmt.Sprintf("%s\t%d\t", x.Traffic, x.Frame) + row
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}
