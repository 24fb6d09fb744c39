package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/verify"
	"github.com/urfave/cli/v2"
)

// grade is one submission's result: its tests' outcomes, or why it
// could not be tested at all.
type grade struct {
	Submission string
	Outcomes   verify.Outcomes
	Err        error
	// Lab is the lab the submission was tested on (its fresh name) and
	// SHA256 that of the submission's own lab file; "" when it was not.
	Lab, SHA256 string
}

// runGrade grades one submission (--grade PATH), or, with --csv, every
// submission in the directory PATH (one line per student), each in a lab
// of its own, one after the other, each destroyed before the next.
func runGrade(ctx context.Context, o *testOptions) error {
	subs := []string{o.Grade}
	if o.CSV {
		ents, err := os.ReadDir(o.Grade)
		if err != nil {
			return fmt.Errorf("--grade: %w", err)
		}
		subs = subs[:0]
		for _, e := range ents {
			subs = append(subs, filepath.Join(o.Grade, e.Name()))
		}
		sort.Strings(subs)
	}
	var grades []grade
	for _, s := range subs {
		g := o.gradeOne(ctx, s)
		g.Submission = filepath.Base(s)
		if o.Keep && g.Lab != "" && o.Err != nil {
			fmt.Fprintf(o.Err, "%s: kept as lab %s (nslab destroy --name %s removes it)\n", g.Submission, g.Lab, g.Lab)
		}
		grades = append(grades, g)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if o.CSV {
		return writeGrades(o, grades)
	}
	g := grades[0]
	if g.Err != nil {
		return fmt.Errorf("submission %s: %w", g.Submission, g.Err)
	}
	return o.write(g.Outcomes, o.started)
}

// gradeOne deploys one submission with the teacher's tests on a fresh lab
// (a name and namespace prefix of its own: never a lab deployed under the
// exercise's name, nor another submission's kept with --keep), runs them,
// and destroys it.
func (o *testOptions) gradeOne(ctx context.Context, sub string) grade {
	file, cleanup, err := submissionFile(o.Lab.File, sub)
	if err != nil {
		return grade{Err: err}
	}
	defer cleanup()
	data, err := os.ReadFile(file)
	if err != nil {
		return grade{Err: err}
	}
	l, failed, err := withTeachersTests(file, o.Lab)
	if err != nil {
		return grade{Err: err, SHA256: spec.FileSHA(data)}
	}
	if l, err = freshLab(o.Manager, l); err != nil {
		return grade{Err: err, SHA256: spec.FileSHA(data)}
	}
	g := grade{Lab: l.Name, SHA256: spec.FileSHA(data)}
	so := *o
	so.Lab = l
	res, err := so.deployAndCheck(ctx)
	if err != nil {
		g.Err = err
		return g
	}
	g.Outcomes = mergeFailed(res, failed, o.Lab.Tests)
	return g
}

// freshLab is lab l under a name and namespace prefix no lab here has:
// grade- and the first six hex digits of its file's hash (the same on
// every run, so that a class's CSV reads the same), or, when a lab of
// that name is here (the same submission kept with --keep), a random one.
func freshLab(m *lab.Manager, l *spec.Lab) (*spec.Lab, error) {
	for try := range 6 {
		name := labname.Random("grade-")
		if try == 0 && len(l.SHA256) >= 6 {
			name = "grade-" + l.SHA256[:6]
		}
		if st, err := m.Store().LoadState(name); err != nil || st != nil {
			continue
		}
		data, err := spec.WithName(l.Source, name)
		if err != nil {
			return nil, err
		}
		return spec.Parse(l.File, data)
	}
	return nil, fmt.Errorf("no free lab name to grade %s on", l.File)
}

// submissionFile is the lab file of a submission: the file itself, the
// one lab file in its directory, or, for a directory of node configs
// only, the teacher's file copied beside them (into a directory of its
// own: the student's is not changed).
func submissionFile(teacher, sub string) (string, func(), error) {
	none := func() {}
	fi, err := os.Stat(sub)
	if err != nil {
		return "", none, err
	}
	if !fi.IsDir() {
		return sub, none, nil
	}
	yamls, _ := filepath.Glob(filepath.Join(sub, "*.yaml"))
	if len(yamls) == 1 {
		return yamls[0], none, nil
	}
	if len(yamls) > 1 {
		return "", none, fmt.Errorf("%s holds %d lab files: a submission is one lab file, or node configs beside which the teacher's file runs", sub, len(yamls))
	}
	dir, err := os.MkdirTemp("", "nslab-grade-")
	if err != nil {
		return "", none, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) } // nslab's own temporary copy
	if err := os.CopyFS(dir, os.DirFS(sub)); err != nil {
		cleanup()
		return "", none, fmt.Errorf("copy %s: %w", sub, err)
	}
	data, err := os.ReadFile(teacher)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, filepath.Base(teacher)), data, 0o644)
	}
	if err != nil {
		cleanup()
		return "", none, err
	}
	return filepath.Join(dir, filepath.Base(teacher)), cleanup, nil
}

// withTeachersTests is the submission's lab with the teacher's tests; a
// test the lab cannot be asked (a node it lacks) is left out and
// returned with why, to count as failed. A problem of the submission's
// own is its error, at its place in its file.
func withTeachersTests(file string, teacher *spec.Lab) (*spec.Lab, map[int][]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	if _, err := spec.Parse(file, data); err != nil {
		if _, rest := spec.TestProblems(err); rest != nil {
			return nil, nil, rest
		}
	}
	tdata, err := os.ReadFile(teacher.File)
	if err != nil {
		return nil, nil, err
	}
	combined, err := spec.WithTests(data, tdata)
	if err != nil {
		return nil, nil, err
	}
	l, err := spec.Parse(file, combined)
	if err == nil {
		return l, nil, nil
	}
	failed, rest := spec.TestProblems(err)
	if rest != nil {
		return nil, nil, rest
	}
	var drop []int
	for i := range failed {
		drop = append(drop, i)
	}
	if combined, err = spec.WithoutTests(combined, drop); err != nil {
		return nil, nil, err
	}
	l, err = spec.Parse(file, combined)
	return l, failed, err
}

// mergeFailed puts the tests that could not be asked back in the
// teacher's order, as failures.
func mergeFailed(res verify.Outcomes, failed map[int][]string, tests []*spec.Test) verify.Outcomes {
	var out verify.Outcomes
	k := 0
	for i, t := range tests {
		if why, ok := failed[i]; ok {
			out = append(out, verify.Outcome{Test: t, Name: t.Name, Kind: t.Kind, Where: t.Node, Expected: t.Describe(), Measured: "cannot be asked of this lab: " + strings.Join(why, "; "), Points: t.Points})
			continue
		}
		if k < len(res) {
			out = append(out, res[k])
			k++
		}
	}
	return out
}

// writeGrades writes one CSV line per submission: each test's points,
// the score and the most there were, and why a submission could not be
// tested.
func writeGrades(o *testOptions, grades []grade) error {
	w := csv.NewWriter(o.Out)
	head := []string{"submission"}
	for _, t := range o.Lab.Tests {
		head = append(head, t.Name)
	}
	if err := w.Write(append(head, "score", "max", "lab", "sha256", "error")); err != nil {
		return err
	}
	for _, g := range grades {
		line := []string{g.Submission}
		scored, total := g.Outcomes.Score()
		for i, t := range o.Lab.Tests {
			p := 0
			if i < len(g.Outcomes) {
				p = g.Outcomes[i].Scored
			}
			line = append(line, strconv.Itoa(p))
			if g.Err != nil {
				total += t.Points // untested: nothing scored of the most there was
			}
		}
		why := ""
		if g.Err != nil {
			why = strings.ReplaceAll(g.Err.Error(), "\n", "; ")
		}
		if err := w.Write(append(line, strconv.Itoa(scored), strconv.Itoa(total), g.Lab, g.SHA256, why)); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return nil
}

// gradeFlags are nslab test's grading options.
func gradeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "grade", Usage: "grade a student's submission `PATH` against FILE's tests (their points): the student's own lab file, or a directory of node configs beside which FILE runs; with --csv, a directory of submissions, one line per student"},
		&cli.BoolFlag{Name: "csv", Usage: "with --grade DIR: every submission in DIR, one CSV line each (each test's points, score, max)"},
	}
}
