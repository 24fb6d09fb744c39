// Command nslab-bench-baseline measures, on this machine, how nslab's
// baselines decide (make bench-baseline), with the placed lab of
// examples/rule-cost.yaml and the cost of one firewall rule that matches
// nothing (about 2% of the router's):
//   - a baseline saved (bench --save-baseline) of the lab with one rule;
//   - the same lab held to it (bench --baseline) -same times: the
//     verdicts counted (a FAIL here is a false alarm);
//   - the lab with one rule more held to it -more times: the verdicts
//     counted (its lab file differs from the baseline's in the router's
//     firewall only, so each run measures both files pair by pair);
//   - a lab whose server has another address held to it: refused, with
//     the reason;
//   - how long each decision took.
//
// It runs nslab as a user would (the binary given by -nslab), each
// bench deploying and destroying its lab.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/nslab/nslab/topology/spec"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nslab/nslab/internal/labname"
)

func main() {
	nslab := flag.String("nslab", "bin/nslab", "the nslab binary")
	file := flag.String("lab", "examples/rule-cost.yaml", "the lab with variants rules1 and rules2")
	same := flag.Int("same", 20, "runs of the baseline's own lab held to it")
	more := flag.Int("more", 10, "runs of the lab with one rule more held to it")
	repeat := flag.Int("repeat", 20, "trials of a run held to the baseline, and of the baseline")
	flag.Parse()
	if err := run(*nslab, *file, *same, *more, *repeat); err != nil {
		fmt.Fprintln(os.Stderr, "bench-baseline:", err)
		os.Exit(1)
	}
}

// run writes the three lab files and measures.
func run(nslab, file string, same, more, repeat int) error {
	dir, err := os.MkdirTemp("", "nslab-bench-baseline-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: best effort
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	src = labname.Rename(src, labname.Random("b"))
	one, err := labWith(src, dir, "rules1", "one-rule.yaml", nil)
	if err != nil {
		return err
	}
	two, err := labWith(src, dir, "rules2", "two-rules.yaml", nil)
	if err != nil {
		return err
	}
	other, err := labWith(src, dir, "rules1", "other-lab.yaml", func(s string) string {
		return strings.Replace(s, "10.0.2.1/24", "10.0.2.7/24", 1)
	})
	if err != nil {
		return err
	}
	base := filepath.Join(dir, "baseline.jsonl")
	rep := fmt.Sprint(repeat)
	t0 := time.Now()
	if out, code := bench(nslab, "--save-baseline", base, "--repeat", rep, one); code != 0 {
		return fmt.Errorf("--save-baseline: exit %d\n%s", code, out)
	}
	fmt.Printf("baseline of %s saved in %.0f s (%d trials)\n\n", filepath.Base(one), time.Since(t0).Seconds(), repeat)
	fmt.Println("lab held to the baseline        runs  PASS  FAIL  INCONCLUSIVE  longest decision")
	for _, x := range []struct {
		what, file string
		n          int
	}{{"the same lab (one rule)", one, same}, {"one rule more (two)", two, more}} {
		if err := verdicts(nslab, x.what, x.file, base, rep, x.n); err != nil {
			return err
		}
	}
	out, code := bench(nslab, "--baseline", base, "--repeat", rep, other)
	fmt.Printf("\nanother lab (the server's address changed): exit %d\n%s", code, indent(out))
	if code != 2 {
		return fmt.Errorf("another lab was not refused (exit %d)", code)
	}
	return nil
}

// verdicts holds lab file f to the baseline n times and prints the
// verdicts' counts and the longest run.
func verdicts(nslab, what, f, base, rep string, n int) error {
	count := map[int]int{}
	var longest time.Duration
	for i := range n {
		t := time.Now()
		out, code := bench(nslab, "--baseline", base, "--repeat", rep, f)
		longest = max(longest, time.Since(t))
		if !slices.Contains([]int{0, 1, 3}, code) {
			return fmt.Errorf("%s, run %d: exit %d\n%s", what, i+1, code, out)
		}
		count[code]++
		fmt.Fprintf(os.Stderr, "%s, run %d: %s\n", what, i+1, verdictLine(out))
	}
	fmt.Printf("%-30s %5d %5d %5d %13d  %.0f s\n", what, n, count[0], count[1], count[3], longest.Seconds())
	return nil
}

// bench runs nslab bench with args and returns its output and exit code.
func bench(nslab string, args ...string) (string, int) {
	out, err := exec.Command(nslab, append([]string{"bench", "-q"}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	return err.Error(), -1
}

// verdictLine is the verdict's reason from bench's output.
func verdictLine(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "against baseline ") && i+2 < len(lines) {
			return strings.TrimSpace(l[strings.LastIndex(l, ":")+1:]) + ": " + strings.TrimSpace(lines[i+2])
		}
	}
	return "no verdict"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// labWith writes the lab of src with the router's firewall of variant
// v, without variants:, as dir/name (edit, if any, changes its text).
func labWith(src []byte, dir, v, name string, edit func(string) string) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return "", err
	}
	root := doc.Content[0]
	fw := spec.MappingValue(spec.MappingValue(spec.MappingValue(spec.MappingValue(root, "variants"), v), "r1"), "firewall")
	r1 := spec.MappingValue(spec.MappingValue(root, "nodes"), "r1")
	if fw == nil || r1 == nil {
		return "", fmt.Errorf("the lab has no variant %s changing r1's firewall", v)
	}
	r1.Content = append(r1.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "firewall"}, fw)
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "variants" {
			root.Content = slices.Delete(root.Content, i, i+2)
			break
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	text := string(out)
	if edit != nil {
		text = edit(text)
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, []byte(text), 0o644)
}
