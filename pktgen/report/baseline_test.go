package report

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// trials is a results file of n trials of the router's relative cost
// around level, with 1% noise.
func trials(path string, level float64, n int, seed uint64, env map[string]string) *ResultsFile {
	rf := NewResultsFile(path, false)
	rng := rand.New(rand.NewPCG(seed, 1))
	k := FigureKey{Traffic: "t", Figure: "router_relative_cost", Frame: 64}
	for range n {
		rf.Figures[k] = append(rf.Figures[k], level*(1+0.01*rng.NormFloat64()))
	}
	for kk, v := range env {
		rf.Env[kk] = v
	}
	return rf
}

// TestAgainstBaseline: the same level passes, 4% slower fails, 0.8%
// slower with few trials is inconclusive with its MDE said, and a
// baseline of another lab file is refused unless forced.
func TestAgainstBaseline(t *testing.T) {
	env := map[string]string{"lab sha256": "aa"}
	base := trials("base", 2, 20, 1, env)
	for _, x := range []struct {
		level   float64
		n       int
		verdict string
	}{{2, 20, Pass}, {2.08, 20, Fail}, {2.016, 4, Inconclusive}} {
		v, err := AgainstBaseline(base, trials("today", x.level, x.n, 2, env), 1, false)
		if err != nil || v.Verdict != x.verdict || v.Figure != "router_relative_cost" || v.MDE <= 0 {
			t.Errorf("level %v, %d trials: %+v %v", x.level, x.n, v, err)
		}
		if x.verdict == Inconclusive && !strings.Contains(v.Why, "these trials detect") {
			t.Errorf("inconclusive without its MDE: %s", v.Why)
		}
	}
	other := trials("today", 2, 20, 3, map[string]string{"lab sha256": "bb"})
	var mm *MismatchError
	if _, err := AgainstBaseline(base, other, 1, false); !errors.As(err, &mm) || !strings.Contains(err.Error(), `lab sha256: "aa" in base, "bb" in today`) {
		t.Errorf("another lab file: %v", err)
	}
	if v, err := AgainstBaseline(base, other, 1, true); err != nil || len(v.Differences) != 1 {
		t.Errorf("forced: %+v %v", v, err)
	}
}

// TestHistoryStep: runs appended to a history, the last five 5% slower:
// the step is found at the first of them.
func TestHistoryStep(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(4, 4))
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 15 {
		level := 2.0
		if i >= 10 {
			level = 2.1
		}
		var lines []byte
		for range 2 {
			b, _ := json.Marshal(&Report{Lab: "x", Traffic: "t", Frame: 64, PPS: 1, Cost: &RouterCost{RelativeCost: level * (1 + 0.005*rng.NormFloat64())}})
			lines = append(append(lines, b...), '\n')
		}
		if _, err := AppendHistory(dir, lines, start.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ReadHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 15 || h.Step == nil || h.Step.At != 10 || h.Step.ChangePct < 3 || h.Step.Latest {
		t.Errorf("history: %+v step %+v", h, h.Step)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 15 {
		t.Errorf("%d files", len(files))
	}
	os.RemoveAll(dir)
}

// TestBaselineZeroTrials: 5 of 50 trials at 0 (an outage) are never
// dropped to judge on the other 45: today's rate at 0 fails, a cost at 0
// today or a baseline's 0 cannot tell, and each names the trials.
func TestBaselineZeroTrials(t *testing.T) {
	env := map[string]string{"lab sha256": "aa"}
	zero := []int{3, 11, 20, 37, 50}
	withZeros := func(rf *ResultsFile) *ResultsFile {
		for k := range rf.Figures {
			for _, i := range zero {
				rf.Figures[k][i-1] = 0
			}
		}
		return rf
	}
	asRate := func(rf *ResultsFile) *ResultsFile {
		out := NewResultsFile(rf.Path, false)
		for k, v := range rf.Figures {
			out.Figures[FigureKey{Traffic: k.Traffic, Frame: k.Frame, Figure: "pps"}] = v
		}
		out.Env = rf.Env
		return out
	}
	named := "3, 11, 20, 37 and 50 of 50"
	for _, x := range []struct {
		what        string
		base, today *ResultsFile
		verdict     string
	}{
		{"a rate at 0 today", asRate(trials("base", 2, 50, 1, env)), asRate(withZeros(trials("today", 2, 50, 2, env))), Fail},
		{"a cost at 0 today", trials("base", 2, 50, 1, env), withZeros(trials("today", 2, 50, 2, env)), Inconclusive},
		{"the baseline's rate at 0", asRate(withZeros(trials("base", 2, 50, 1, env))), asRate(trials("today", 2, 50, 2, env)), Inconclusive},
	} {
		v, err := AgainstBaseline(x.base, x.today, 1, false)
		if err != nil {
			t.Fatalf("%s: %v", x.what, err)
		}
		if v.Verdict != x.verdict || !strings.Contains(v.Why, named) {
			t.Errorf("%s: %s, %q; want %s naming trials %s", x.what, v.Verdict, v.Why, x.verdict, named)
		}
	}
	// Every trial at 0: no "other trials" to speak of.
	all := asRate(trials("today", 2, 50, 2, env))
	for k := range all.Figures {
		clear(all.Figures[k])
	}
	if v, _ := AgainstBaseline(asRate(trials("base", 2, 50, 1, env)), all, 1, false); v.Verdict != Fail || strings.Contains(v.Why, "other trials") || !strings.Contains(v.Why, "1 to 50 (all 50)") {
		t.Errorf("every trial at 0: %s, %q; want FAIL naming all 50 and nothing of other trials", v.Verdict, v.Why)
	}
	// The same trials without the zeros pass: the zeros alone decide.
	if v, _ := AgainstBaseline(asRate(trials("base", 2, 50, 1, env)), asRate(trials("today", 2, 50, 2, env)), 1, false); v.Verdict != Pass {
		t.Errorf("without the zeros: %s %s", v.Verdict, v.Why)
	}
}
