package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nslab/nslab/internal/fold"
	"github.com/urfave/cli/v2"
)

// Each verb is three things, in its own file:
//
//   - an options type (deployOptions, ...): everything the verb does,
//     read from the command line once: the lab, the manager, the writers;
//   - a function that reads the flags and arguments into it (the only
//     code that sees the cli.Context), and one that runs it (runDeploy,
//     ...), which tests call directly, with no binary and no flags;
//   - a constructor (deployCommand) that takes the run function, so that a
//     test can check how flags become options (nil: the real one).
//
// The libraries return typed results and errors; the run function picks
// the format the options ask for and where it goes.

// action is a verb's cli.Action: read the options, then run them.
func action[O any](read func(*cli.Context) (*O, error), run func(context.Context, *O) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := read(c)
		if err != nil {
			return err
		}
		return run(c.Context, o)
	}
}

// screenKey is where folded keeps its writers for flushScreens.
const screenKey = "nslab screen"

// flushScreens writes what the writers folded made still hold (a last
// word with no newline after it): the app's After, so that it follows
// every verb, those run through the agents too.
func flushScreens(c *cli.Context) error {
	fs, _ := c.App.Metadata[screenKey].([]*fold.Writer)
	var errs []error
	for _, f := range fs {
		errs = append(errs, f.Flush())
	}
	return errors.Join(errs...)
}

// screen is where a verb writes what a person reads: standard output,
// folded (see folded) when the verb prints its default form (see human),
// so that no line of a default report is wider than a terminal of 120
// columns. flushScreens flushes it when the verb returns.
func screen(c *cli.Context) io.Writer {
	if !human(c) {
		return c.App.Writer
	}
	return folded(c, c.App.Writer)
}

// widthFlag is the global option of the width reports are folded at.
const widthFlag = "width"

// folded is w folded at --width (fold.Width unless given; 0: not
// folded), flushed by flushScreens when the verb returns: for the notes a verb
// writes to standard error as it goes, and through screen for its report.
func folded(c *cli.Context, w io.Writer) io.Writer {
	width := c.Int(widthFlag)
	if width <= 0 {
		return w
	}
	f := fold.New(w, width)
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	fs, _ := c.App.Metadata[screenKey].([]*fold.Writer)
	c.App.Metadata[screenKey] = append(fs, f)
	return f
}

// human says whether the verb prints its default form for a person:
// not JSON, CSV, markdown, TAP, a script (--dry-run) or the long forms
// (--details), which are read by programs or wanted whole.
func human(c *cli.Context) bool {
	switch c.String("format") {
	case "", "table", "matrix", "list":
	default:
		return false
	}
	for _, f := range []string{"details", "dry-run", "tap", "csv"} {
		if c.Bool(f) {
			return false
		}
	}
	return true
}

// or is run, or def when a test gave no run function.
func or[O any](run, def func(context.Context, *O) error) func(context.Context, *O) error {
	if run == nil {
		return def
	}
	return run
}

// command is a verb's cli.Command: its name, one line of help, what its
// operands are, its flags, the reader of its options, and the function
// that runs them (run, or def when a test gave none).
func command[O any](name, usage, operands string, flags []cli.Flag, read func(*cli.Context) (*O, error), run, def func(context.Context, *O) error) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, ArgsUsage: operands, Flags: flags, Action: action(read, or(run, def))}
}

// printScript writes a dry run's script to out, or returns the error that
// kept it from being made: printScript(out)(m.ApplyScript(l)).
func printScript(out io.Writer) func(string, error) error {
	return func(script string, err error) error {
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(out, script)
		return err
	}
}
