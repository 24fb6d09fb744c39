package main

import (
	"fmt"
	"strings"

	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// What nslab says when the command line itself is wrong: one line that
// says what to type, and the help page to read, never the page itself.

// unknownVerb is the app's action: nslab alone shows the help; a word
// that is no verb gets the nearest verb.
func unknownVerb(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowAppHelp(c)
	}
	verb := c.Args().First()
	var names []string
	for _, cmd := range visible(c.App) {
		names = append(names, cmd.Name)
	}
	msg := fmt.Sprintf("no verb %q", verb)
	if n := spec.Nearest(verb, names); n != "" {
		msg += fmt.Sprintf("; did you mean %s?", n)
	}
	return cli.Exit(msg+" (nslab help lists the verbs)", 2)
}

// usageError is every verb's OnUsageError: an option it has not, with
// the nearest it has, or a value it cannot read, with what it takes.
func usageError(c *cli.Context, err error, _ bool) error {
	verb := "nslab"
	flags := c.App.Flags
	if c.Command != nil && c.Command.Name != "" {
		verb, flags = "nslab "+c.Command.FullName(), c.Command.Flags
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = fmt.Sprintf("no option --%s", name)
		if n := spec.Nearest("--"+name, flagNames(flags)); n != "" {
			msg += fmt.Sprintf("; did you mean %s?", n)
		}
	} else if f, value, ok := badValue(msg, flags); ok {
		msg = fmt.Sprintf("--%s %s: %s", f.Names()[0], value, valueWants(f))
	}
	return cli.Exit(fmt.Sprintf("%s: %s (nslab help %s)", strings.TrimPrefix(verb, "nslab "), msg, strings.TrimPrefix(verb, "nslab ")), 2)
}

// badValue finds the flag of Go's `invalid value "2" for flag -duration:
// ...` and the value given.
func badValue(msg string, flags []cli.Flag) (cli.Flag, string, bool) {
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return nil, "", false
	}
	value, rest, ok := strings.Cut(rest, " for flag -")
	if !ok {
		return nil, "", false
	}
	name, _, _ := strings.Cut(rest, ":")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == strings.TrimLeft(name, "-") {
				return f, value, true
			}
		}
	}
	return nil, "", false
}

// valueWants says what a flag's value must be.
func valueWants(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "a duration with its unit, such as 2s, 500ms or 1m"
	case *cli.IntFlag, *cli.UintFlag, *cli.Int64Flag, *cli.Uint64Flag:
		return "a whole number"
	case *cli.Float64Flag:
		return "a number"
	case *cli.BoolFlag:
		return "true or false"
	}
	return "not a value it takes"
}

// withUsageErrors gives every verb, and each of its own verbs, usageError.
func withUsageErrors(cmds []*cli.Command) []*cli.Command {
	for _, c := range cmds {
		c.OnUsageError = usageError
		withUsageErrors(c.Subcommands)
	}
	return cmds
}
