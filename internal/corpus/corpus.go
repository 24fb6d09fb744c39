// Package corpus runs a directory of Kathara labs through nslab as a
// teacher would (import, validate, deploy, check, destroy), with the
// nslab binary as a user runs it, and tabulates what each stage did. It
// runs in the host's namespaces as root: nslab deploys each lab and
// destroys it.
package corpus

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Stages of a lab's run, in order.
const (
	Imported  = "imported"
	Validated = "validated"
	Deployed  = "deployed"
	Converged = "converged"
	Destroyed = "destroyed clean"
)

// Stages are the stages in order.
var Stages = []string{Imported, Validated, Deployed, Converged, Destroyed}

// Result is one lab's run: how far it got, and why it stopped there.
type Result struct {
	Dir  string // the lab's directory, relative to the corpus
	Name string // the lab name the import gave it
	// Passed are the stages it passed (destroyed clean also after a
	// stage that failed); Failed the first it did not pass ("" when
	// none), and Reason what nslab said.
	Passed []string
	Failed string
	Reason string
	// Lacks: validate refused the lab, in one line, only for what this
	// machine lacks (a kernel feature or a program its lines ask for).
	Lacks bool
}

// DestroyedClean reports whether the lab left nothing behind (a lab that
// never deployed leaves nothing).
func (r Result) DestroyedClean() bool {
	return r.Failed != Destroyed
}

// Runner runs labs with the nslab binary NSLab.
type Runner struct {
	NSLab string
	// Command makes the command that runs nslab with args (nil: NSLab
	// with args, in this process's environment): a test runs its own
	// binary as nslab.
	Command func(args ...string) *exec.Cmd
	Wait    time.Duration  // check --wait
	Skip    *regexp.Regexp // labs left out, by path under the corpus (nil: none)
	// Name names the lab of a directory (nil: the name the import gives
	// it): a test's labs take random names.
	Name func(dir string) string
	// Parallel is how many labs run at once (0: one): labs whose names
	// are their own (Name) can, and their routing converges meanwhile.
	Parallel int
	Progress io.Writer // a line per lab as it starts (nil: none)
}

// Labs are the lab directories under dir (those holding lab.conf),
// relative to it, sorted, without those Skip matches.
func (r Runner) Labs(dir string) ([]string, error) {
	var labs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "lab.conf" {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		if err != nil {
			return err
		}
		if r.Skip == nil || !r.Skip.MatchString(filepath.ToSlash(rel)+"/") {
			labs = append(labs, rel)
		}
		return nil
	})
	sort.Strings(labs)
	return labs, err
}

// Run runs every lab under dir.
func (r Runner) Run(dir string) ([]Result, error) {
	labs, err := r.Labs(dir)
	if err != nil {
		return nil, err
	}
	if len(labs) == 0 {
		return nil, fmt.Errorf("%s holds no Kathara lab (a directory with lab.conf)", dir)
	}
	out := make([]Result, len(labs))
	errs := make([]error, len(labs))
	slots := make(chan struct{}, max(1, r.Parallel))
	var wg sync.WaitGroup
	for i, rel := range labs {
		slots <- struct{}{}
		if r.Progress != nil {
			fmt.Fprintf(r.Progress, "[%d/%d] %s\n", i+1, len(labs), rel)
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			out[i], errs[i] = r.One(filepath.Join(dir, rel))
			out[i].Dir = rel
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// One runs the lab in dir: each stage until one fails; destroy whenever
// deploy was tried (a failed deploy must leave nothing too).
func (r Runner) One(dir string) (Result, error) {
	var res Result
	tmp, err := os.MkdirTemp("", "nslab-corpus-")
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a temporary directory: best effort
	file := filepath.Join(tmp, "nslab.yaml")
	fail := func(stage string, out []byte) Result {
		res.Failed, res.Reason = stage, reason(out)
		return res
	}
	args := []string{"import", "kathara", "--out", file}
	if r.Name != nil {
		args = append(args, "--name", r.Name(dir))
	}
	out, err := r.nslab(append(args, dir)...)
	if err != nil {
		return fail(Imported, out), nil
	}
	if m := regexp.MustCompile(`lab ([a-z0-9-]+),`).FindSubmatch(out); m != nil {
		res.Name = string(m[1])
	}
	res.Passed = append(res.Passed, Imported)
	if out, err := r.nslab("validate", file); err != nil {
		res.Lacks = bytes.Contains(out, []byte("would not deploy on this machine"))
		return fail(Validated, out), nil
	}
	res.Passed = append(res.Passed, Validated)
	deployOut, deployErr := r.nslab("deploy", "-q", file)
	stopped := ""
	var stopOut []byte
	if deployErr != nil {
		stopped, stopOut = Deployed, deployOut
	} else {
		res.Passed = append(res.Passed, Deployed)
		out, err := r.nslab("check", "--wait", r.Wait.String(), file)
		if err != nil || !bytes.Contains(out, []byte(" 0 broken")) {
			stopped, stopOut = Converged, out
		} else {
			res.Passed = append(res.Passed, Converged)
		}
	}
	// destroy, whatever happened: by name, since a failed deploy may
	// have left what it could not take back.
	clean := true
	var destroyOut []byte
	if res.Name != "" {
		out, err := r.nslab("destroy", "--name", res.Name)
		inspectOut, inspectErr := r.nslab("inspect", "--name", res.Name)
		if (err != nil && deployErr == nil) || inspectErr == nil {
			clean, destroyOut = false, append(out, inspectOut...)
		}
		if left := leftNamespaces(res.Name + "-"); len(left) > 0 {
			clean, destroyOut = false, fmt.Appendf(destroyOut, "namespaces left: %s", strings.Join(left, " "))
		}
	}
	if !clean {
		return fail(Destroyed, destroyOut), nil
	}
	res.Passed = append(res.Passed, Destroyed) // left nothing, whether it converged or not
	if stopped != "" {
		return fail(stopped, stopOut), nil
	}
	return res, nil
}

// leftNamespaces are the named network namespaces whose names start with
// prefix (an imported lab's prefix is its name and -).
func leftNamespaces(prefix string) []string {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var left []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			left = append(left, e.Name())
		}
	}
	return left
}

// nslab runs the nslab binary with args and returns its output (both
// streams) and its error.
func (r Runner) nslab(args ...string) ([]byte, error) {
	cmd := exec.Command(r.NSLab, args...)
	if r.Command != nil {
		cmd = r.Command(args...)
	}
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return out, fmt.Errorf("run %s: %w", r.NSLab, err)
	}
	return out, err
}

// reason is the line of out that says why: the first line nslab started
// with "nslab:", else the last non-blank line; cut to 200 characters.
func reason(out []byte) string {
	var last string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "nslab:") {
			last = line
			break
		}
		if line != "" {
			last = line
		}
	}
	if len(last) > 200 {
		last = last[:197] + "..."
	}
	return last
}

// Table prints results, a row per lab, and a line of totals.
func Table(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAB\tNAME\tIMPORTED\tVALIDATED\tDEPLOYED\tCONVERGED\tDESTROYED CLEAN\tREASON")
	counts := map[string]int{}
	lacks := 0
	for _, x := range results {
		if x.Lacks {
			lacks++
		}
		row := []string{x.Dir, x.Name}
		for _, s := range Stages {
			mark := "-"
			switch {
			case slices.Contains(x.Passed, s):
				mark = "yes"
				counts[s]++
			case x.Failed == s:
				mark = "NO"
			}
			row = append(row, mark)
		}
		row = append(row, x.Reason)
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d labs: %d imported, %d validated, %d deployed, %d converged (check with 0 broken), %d destroyed clean\n",
		len(results), counts[Imported], counts[Validated], counts[Deployed], counts[Converged], counts[Destroyed])
	if lacks > 0 {
		fmt.Fprintf(w, "%d refused in one line for what this machine lacks (a kernel feature or a program): %d converged or refused only for that\n",
			lacks, counts[Converged]+lacks)
	}
}
