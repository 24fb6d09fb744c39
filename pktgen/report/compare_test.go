//go:build !vmtest

// Pure statistics: the VM (emulated CPUs) leaves them out.

package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/stats"
)

// writeResults writes a synthetic results file: n runs whose pps are
// mean with 2% noise, in one environment.
func writeResults(t *testing.T, rng *rand.Rand, n int, mean float64, env Env) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for range n {
		r := &Report{Traffic: "forward", Frame: 64, PPS: mean * (1 + 0.02*rng.NormFloat64()), Hops: []HopCounters{}, Env: env}
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func compareFiles(t *testing.T, a, b string, force bool) (*Comparison, error) {
	t.Helper()
	ra, err := ReadResults(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := ReadResults(b)
	if err != nil {
		t.Fatal(err)
	}
	return Compare(ra, rb, force)
}

func ppsChange(c *Comparison) Change {
	for _, x := range c.Changes {
		if x.Figure == "pps" {
			return x
		}
	}
	return Change{}
}

// TestCompareSynthetic: a known 10% shift (2% noise, 8 runs each) is
// significant, with its interval around +10%; two files drawn from one
// distribution are not, in at least 52 of 60 tries (95% expected).
func TestCompareSynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("one goroutine, fixed input: slow under -race (make test-unit runs -short -race), which has nothing here to see; the runs without -short run it")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	env := Env{LabHash: "abc", Kernel: "6.18", Engine: "userspace", NSLab: "v1"}
	c, err := compareFiles(t, writeResults(t, rng, 8, 300000, env), writeResults(t, rng, 8, 330000, env), false)
	if err != nil {
		t.Fatal(err)
	}
	x := ppsChange(c)
	if !x.Significant || x.ChangePct < 5 || x.ChangePct > 15 || x.ChangeLow > 10 || x.ChangeHigh < 10 {
		t.Errorf("a 10%% shift: %+v", x)
	}
	quiet := 0
	for range 60 {
		c, err := compareFiles(t, writeResults(t, rng, 8, 300000, env), writeResults(t, rng, 8, 300000, env), false)
		if err != nil {
			t.Fatal(err)
		}
		if !ppsChange(c).Significant {
			quiet++
		}
	}
	if quiet < 52 {
		t.Errorf("one distribution: not significant in %d of 60, want 52 or more", quiet)
	}
	for _, f := range []string{"table", "json", "markdown"} {
		var out strings.Builder
		if err := c.Write(&out, f); err != nil || !strings.Contains(out.String(), "forward") {
			t.Errorf("%s: %v\n%s", f, err, out.String())
		}
	}
}

// TestCompareRefusesOtherEnvironments: files of another lab, kernel or
// engine are refused, naming what differs, unless forced.
func TestCompareRefusesOtherEnvironments(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := writeResults(t, rng, 3, 1, Env{LabHash: "abc", Kernel: "6.18", Engine: "userspace"})
	b := writeResults(t, rng, 3, 1, Env{LabHash: "abd", Kernel: "6.18", Engine: "kernel pktgen"})
	_, err := compareFiles(t, a, b, false)
	if err == nil || !strings.Contains(err.Error(), `lab sha256: "abc"`) || !strings.Contains(err.Error(), "engine:") || strings.Contains(err.Error(), "kernel:") {
		t.Errorf("refusal: %v", err)
	}
	if c, err := compareFiles(t, a, b, true); err != nil || len(c.Ignored) != 2 {
		t.Errorf("forced: %+v %v", c, err)
	}
}

func TestReadResultsErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(p, []byte("{\"hops\": []}\nnot json\n"), 0o644)
	if _, err := ReadResults(p); err == nil || !strings.Contains(err.Error(), p+":2:") {
		t.Errorf("bad line: %v", err)
	}
	os.WriteFile(p, nil, 0o644)
	if _, err := ReadResults(p); err == nil || !strings.Contains(err.Error(), "holds no results") {
		t.Errorf("empty: %v", err)
	}
}

// TestNoiseOf: steal on the run's CPUs (those with a role) counts, the
// warm-up does not, and lossy trials with steal are told apart.
func TestNoiseOf(t *testing.T) {
	rep := func(steal0, steal1 float64) *Report {
		return &Report{CPU: []CPUUse{{N: 0, Steal: steal0, Roles: []string{"sender ns1"}}, {N: 1, Steal: steal1, Roles: []string{"router ns2"}}, {N: 2, Steal: 50}}}
	}
	n := NoiseOf([]MLRTrial{
		{Warmup: true, Report: rep(9, 9)},
		{LossRatio: 0.1, Report: rep(0, 2)},
		{LossRatio: 0.1, Report: rep(0, 0)},
		{LossRatio: 0, Report: rep(1, 0)},
	})
	if n.Trials != 3 || n.WithSteal != 2 || n.Lossy != 2 || n.LossyWithSteal != 1 || n.MaxStealPct != 2 || n.MeanStealPct != 1 {
		t.Errorf("noise %+v", n)
	}
}

// TestReadResultsKeepsVariantsApart: a variant run's results file holds
// each variant's runs under its own name.
func TestReadResultsKeepsVariantsApart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "v.jsonl")
	var lines []byte
	for _, v := range []string{"nat", "plain", "nat"} {
		b, _ := json.Marshal(&Report{Traffic: "lan-wan", Variant: v, Frame: 64, PPS: 1, Hops: []HopCounters{}})
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(p, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	rf, err := ReadResults(p)
	if err != nil {
		t.Fatal(err)
	}
	nat, plain := rf.Figures[FigureKey{Traffic: "lan-wan (variant nat)", Frame: 64, Figure: "pps"}], rf.Figures[FigureKey{Traffic: "lan-wan (variant plain)", Frame: 64, Figure: "pps"}]
	if len(nat) != 2 || len(plain) != 1 {
		t.Errorf("figures %v", rf.Figures)
	}
}

// TestLossAgainst: a run that sent its load is judged on the path's
// loss; one that sent 10% short has those 10% lost too; a run as fast as
// the engine goes is judged on what it sent.
func TestLossAgainst(t *testing.T) {
	r := &Report{Sent: 99500, Received: 99500, Elapsed: time.Second}
	if got := r.LossAgainst(100000); got != 0 {
		t.Errorf("sent 99.5%% of the load, lost nothing: %v", got)
	}
	r = &Report{Sent: 90000, Received: 89100, Loss: 900, Elapsed: time.Second}
	if got := r.LossAgainst(100000); math.Abs(got-0.109) > 1e-9 {
		t.Errorf("sent 90%%, 1%% of that lost: %v, want 0.109", got)
	}
	if got := r.LossAgainst(0); math.Abs(got-0.01) > 1e-9 {
		t.Errorf("as fast as it goes: %v, want the path's 0.01", got)
	}
}

// TestChangeFromZero: against an old median of 0 there is no ratio: the
// change is undefined, its interval none, and the table says so rather
// than a percentage from resamples that happened not to be 0.
func TestChangeFromZero(t *testing.T) {
	ch := &Change{Old: 0, New: 404.5}
	ch.unpairedChange([]float64{0, 0, 0, 0, 3, 0}, []float64{400, 410, 399, 405, 404, 420})
	if !ch.Undefined || ch.ChangeLow != 0 || ch.ChangeHigh != 0 {
		t.Fatalf("%+v", ch)
	}
	c := &Comparison{Old: "a", New: "b", Changes: []Change{*ch}}
	var out strings.Builder
	if err := c.Write(&out, "table"); err != nil || !strings.Contains(out.String(), "n/a  (old median 0)") {
		t.Errorf("table (%v):\n%s", err, out.String())
	}
}

// TestDecideZeroTrials: a trial of B whose figure is 0 (an outage) is
// not dropped for the rest to decide on: the comparison cannot tell, and
// names the trial.
func TestDecideZeroTrials(t *testing.T) {
	a, b := NewResultsFile("a", false), NewResultsFile("b", false)
	k := FigureKey{Traffic: "t", Frame: 64, Figure: "pps"}
	for i := range 20 {
		a.Figures[k] = append(a.Figures[k], 1000+float64(i%3))
		b.Figures[k] = append(b.Figures[k], 1000+float64(i%5))
	}
	b.Figures[k][4] = 0
	c, err := Compare(a, b, false)
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := c.Decide(k, stats.Plan{Looks: []int{10, 20}, Alpha: 0.05, Margin: 0.02, Power: 0.9, Resamples: 100}, true)
	if err != nil || outcome != stats.CannotTell || !strings.Contains(c.Decision.Decision, "B's trials 5 of 20 measured pps 0") {
		t.Errorf("%s %v: %s", outcome, err, c.Decision.Decision)
	}
}
