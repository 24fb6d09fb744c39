package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nslab/nslab/pktgen/auto"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/verify"
	"github.com/urfave/cli/v2"
)

// testOptions is nslab test: the lab, how to report, and whether to keep
// a lab it deployed.
type testOptions struct {
	Lab     *spec.Lab
	Manager *lab.Manager
	Format  string // table or json
	TAP     bool
	JUnit   string // a file to write JUnit XML to; "": none
	Keep    bool
	Wait    time.Duration // for tests without wait: of a lab that runs routing daemons
	Out     io.Writer
	Err     io.Writer // where grading says which labs it kept
	Grade   string    // --grade: a submission, or with CSV a directory of them
	CSV     bool
	started time.Time
}

// daemonWait is how long a test without wait: of a lab whose nodes run
// FRR or BIRD is tried again: routing converges after the deploy.
const daemonWait = 60 * time.Second

func testCommand(run func(context.Context, *testOptions) error) *cli.Command {
	flags := append([]cli.Flag{
		hostFlag(),
		topoFlag(),
		prefixFlag(),
		asDeployedFlag(),
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table or json (one document: tests, summary, ok)"},
		&cli.BoolFlag{Name: "tap", Usage: "print the results as TAP version 13 instead"},
		&cli.StringFlag{Name: "junit", Usage: "also write the results as JUnit XML to `FILE`, as CI systems read it"},
		&cli.BoolFlag{Name: "keep", Usage: "keep a lab test deployed (by default it destroys what it deployed)"},
		&cli.DurationFlag{Name: "wait", Value: daemonWait, Usage: "how long a test without wait: is tried again in a lab whose nodes run FRR or BIRD (their routing converges after the deploy)"},
	}, gradeFlags()...)
	return command("test", "check a lab against its file's tests: deploy it if it is not, run every test, print each result, exit 0 only if all pass", "[FILE]", flags, func(c *cli.Context) (*testOptions, error) {
		l, err := readTestLab(c)
		if err == nil && c.String("format") != "table" && c.String("format") != "json" {
			err = cli.Exit("--format: table or json", 2)
		}
		if err == nil && c.Bool("csv") && c.String("grade") == "" {
			err = cli.Exit("--csv grades a directory of submissions: give it with --grade DIR", 2)
		}
		return &testOptions{Lab: l, Manager: manager(c), Format: c.String("format"), TAP: c.Bool("tap"), JUnit: c.String("junit"), Keep: c.Bool("keep"),
			Wait: c.Duration("wait"), Out: screen(c), Err: c.App.ErrWriter, Grade: c.String("grade"), CSV: c.Bool("csv"), started: time.Now()}, err
	}, run, runTest)
}

// readTestLab is the lab to test, or with --grade the teacher's tests
// alone (the lab is each submission).
func readTestLab(c *cli.Context) (*spec.Lab, error) {
	if c.String("grade") == "" {
		return readDeployed(c)
	}
	path, err := topoPath(c)
	if err != nil {
		return nil, err
	}
	return spec.ReadTests(path)
}

// runTest deploys the lab if it is not deployed, runs its tests, writes
// the results, and destroys what it deployed.
func runTest(ctx context.Context, o *testOptions) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	if len(o.Lab.Tests) == 0 {
		return cli.Exit(fmt.Sprintf("lab %s has no tests: (see docs/testing-labs.md)", o.Lab.Name), 2)
	}
	if o.Grade != "" {
		return runGrade(ctx, o)
	}
	res, err := o.deployAndCheck(ctx)
	if err != nil {
		return err
	}
	return o.write(res, o.started)
}

// deployAndCheck deploys the lab unless it is deployed, runs its tests,
// and destroys what it deployed (unless --keep).
func (o *testOptions) deployAndCheck(ctx context.Context) (verify.Outcomes, error) {
	deployed, err := o.deployIfNeeded(ctx)
	if err != nil {
		return nil, err
	}
	if deployed && !o.Keep {
		defer func() { _, _ = o.Manager.Destroy(o.Lab.Name) }() // what it deployed, even after a failed test
	}
	r, err := o.Manager.Open(o.Lab)
	if err != nil {
		return nil, fmt.Errorf("lab %s is not deployed completely: %w", o.Lab.Name, err)
	}
	defer r.Close()
	ck := &verify.Checker{Run: r.Opened, Command: o.inNode, Traffic: o.bench(r)}
	var res verify.Outcomes
	for _, t := range o.Lab.Tests {
		res = append(res, ck.Check(ctx, o.withWait(t)))
	}
	return res, nil
}

// deployIfNeeded deploys the lab unless it is deployed; it reports
// whether it did.
func (o *testOptions) deployIfNeeded(ctx context.Context) (bool, error) {
	if st, err := o.Manager.Recorded(o.Lab.Name); err == nil && st != nil {
		return false, nil
	}
	if _, err := o.Manager.Deploy(ctx, o.Lab); err != nil {
		return false, fmt.Errorf("deploy lab %s: %w", o.Lab.Name, err)
	}
	return true, nil
}

// withWait is t with the lab's wait when it has none of its own and the
// lab runs routing daemons.
func (o *testOptions) withWait(t *spec.Test) *spec.Test {
	if t.Wait > 0 || t.Kind == "traffic" {
		return t
	}
	for _, n := range o.Lab.Nodes {
		if n.FRR != nil || n.BIRD != nil {
			c := *t
			c.Wait = o.Wait
			return &c
		}
	}
	return t
}

// inNode runs argv in node's namespace and view, and returns what it
// printed.
func (o *testOptions) inNode(node string, argv ...string) ([]byte, error) {
	n, v, err := o.Manager.Store().OpenNode(o.Lab.Name, node)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	if v != nil {
		defer v.Close()
	}
	return deployed.RunIn(context.Background(), n, v, "", argv...)
}

// bench is the traffic tests' bench: the run at the test's rate, its
// figures.
func (o *testOptions) bench(r *lab.Running) func(context.Context, *spec.Test) (verify.Traffic, error) {
	here := capabilities()
	return func(ctx context.Context, t *spec.Test) (verify.Traffic, error) {
		ts, err := bench.Streams(o.Lab.Model(), []string{t.Run}, bench.Selection{Rate: t.Rate})
		if err != nil {
			return verify.Traffic{}, err
		}
		b, err := bench.New(r, ts[0], bench.Options{Interval: time.Second, Version: version, Latency: t.MaxP99 > 0, Caps: &here, Chooser: auto.Chooser{Caps: &here}})
		if err != nil {
			return verify.Traffic{}, err
		}
		defer b.Close()
		frame := 0
		if len(ts[0].Frames) > 0 {
			frame = ts[0].Frames[0]
		}
		rep, err := b.Run(ctx, frame)
		if err != nil {
			return verify.Traffic{}, err
		}
		m := verify.Traffic{Sent: int64(rep.Sent), Received: int64(rep.Received), LossPercent: rep.LossPct, RatePPS: rep.PPS}
		if rep.Latency != nil {
			m.P99 = time.Duration(rep.Latency.P99Ns)
		}
		return m, nil
	}
}

// write prints the results as asked, writes the JUnit file, and fails
// (exit 1) when a test failed.
func (o *testOptions) write(res verify.Outcomes, started time.Time) error {
	if o.JUnit != "" {
		f, err := os.Create(o.JUnit)
		if err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
		err = res.WriteJUnit(f, o.Lab.Name, started)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	summary := res.Summary(o.Lab.Name)
	ok := res.Passed() == len(res)
	switch {
	case o.TAP:
		res.WriteTAP(o.Out)
	case o.Format == "json":
		if err := writeJSON(o.Out, struct {
			Lab     string          `json:"lab"`
			Tests   verify.Outcomes `json:"tests"`
			Summary string          `json:"summary"`
			OK      bool            `json:"ok"`
		}{o.Lab.Name, res, summary, ok}); err != nil {
			return err
		}
	default:
		res.WriteTable(o.Out)
		fmt.Fprintln(o.Out)
		res.WriteFailures(o.Out)
		fmt.Fprintln(o.Out, summary)
	}
	if !ok {
		return cli.Exit("", 1) // said above
	}
	return nil
}
