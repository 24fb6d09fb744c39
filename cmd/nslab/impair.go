package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// impairOptions is nslab impair: an interface of a deployed lab (Lab
// names the lab when the node is in several; Interface is NODE:IF or
// LAB:NODE:IF) and the impairment to set, nil to clear it.
type impairOptions struct {
	Manager   *lab.Manager
	Lab       string
	Interface string
	Impair    *spec.Impair
	Out       io.Writer
}

func impairCommand(run func(context.Context, *impairOptions) error) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "name", Usage: "lab `NAME` (when several labs have the node)"},
		nodeTopoFlag(),
		asDeployedFlag(),
		&cli.StringFlag{Name: "delay", Usage: "delay `D`, e.g. 20ms"},
		&cli.StringFlag{Name: "jitter", Usage: "jitter `D` of the delay, e.g. 5ms"},
		&cli.StringFlag{Name: "loss", Usage: "packets lost, e.g. 1%"},
		&cli.StringFlag{Name: "burst", Usage: "with --loss: lost in runs of `N` packets on average (netem's Gilbert-Elliott model), e.g. 4"},
		&cli.StringFlag{Name: "duplicate", Usage: "packets duplicated, e.g. 0.1%"},
		&cli.StringFlag{Name: "reorder", Usage: "packets sent ahead of the delayed rest, e.g. 1% (needs --delay)"},
		&cli.StringFlag{Name: "corrupt", Usage: "packets with a bit flipped, e.g. 0.1%"},
		&cli.StringFlag{Name: "rate", Usage: "link rate, e.g. 10Mbit"},
		&cli.IntFlag{Name: "limit", Usage: "packets queued at most (default 1000)"},
		&cli.BoolFlag{Name: "clear", Usage: "remove the impairment"},
	}
	return command("impair", "set (or --clear) what a deployed lab's link does to what an interface sends: delay, loss, rate...", "NODE:IF   (or LAB:NODE:IF)", flags, func(c *cli.Context) (*impairOptions, error) {
		if c.NArg() != 1 {
			return nil, cli.Exit("usage: nslab impair NODE:IF --delay 20ms --loss 1% ... | --clear", 2)
		}
		m, err := impairFlags(c)
		if err != nil {
			return nil, cli.Exit(err.Error(), 2)
		}
		name, err := labOfNode(c)
		if err != nil {
			return nil, err
		}
		return &impairOptions{Manager: manager(c), Lab: name, Interface: c.Args().First(), Impair: m, Out: c.App.Writer}, nil
	}, run, runImpair)
}

func runImpair(_ context.Context, o *impairOptions) error {
	return onInterface(o.Manager, o.Lab, o.Interface, func(r *lab.Running, ep spec.Endpoint) error { return impair(r, ep, o) })
}

// impair sets (or clears) the impairment on ep of running lab r.
func impair(r *lab.Running, ep spec.Endpoint, o *impairOptions) error {
	if o.Impair == nil {
		had, err := r.ClearImpair(ep)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s: %s\n", ep, map[bool]string{true: "impairment removed", false: "had no impairment"}[had])
		return nil
	}
	if err := r.Impair(ep, o.Impair); err != nil {
		return err
	}
	st, err := r.Impairment(ep)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s: %s (as the kernel has it)\n", ep, st)
	return nil
}

// impairFlags reads the impairment the flags describe; nil with --clear.
func impairFlags(c *cli.Context) (*spec.Impair, error) {
	set := 0
	for _, f := range []string{"delay", "jitter", "loss", "burst", "duplicate", "reorder", "corrupt", "rate", "limit"} {
		if c.IsSet(f) {
			set++
		}
	}
	if c.Bool("clear") {
		if set > 0 {
			return nil, fmt.Errorf("--clear removes the impairment: give it alone")
		}
		return nil, nil
	}
	if set == 0 || set == 1 && c.IsSet("limit") {
		return nil, fmt.Errorf("say what the link does: --delay, --loss, --duplicate, --reorder, --corrupt or --rate (or --clear)")
	}
	m := &spec.Impair{Limit: c.Int("limit")}
	var errs []string
	for _, flag := range spec.ImpairKeys {
		if v := c.String(flag); v != "" && flag != "limit" {
			if err := m.Set(flag, v); err != nil {
				errs = append(errs, fmt.Sprintf("--%s: %v", flag, err))
			}
		}
	}
	if c.IsSet("limit") && m.Limit < 1 {
		errs = append(errs, "--limit: at least 1 packet")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	if key, msg := m.Problem(); msg != "" {
		return nil, fmt.Errorf("--%s: %s", key, msg)
	}
	return m, nil
}

func linkCommand(run func(context.Context, *switchOptions) error) *cli.Command {
	return switchCommand("link", "take a deployed lab's interface down (the link fails) or bring it up", "down", "up", "NODE:IF", run, runLink)
}

func runLink(_ context.Context, o *switchOptions) error {
	return onInterface(o.Manager, o.Lab, o.Target, func(r *lab.Running, ep spec.Endpoint) error {
		if err := r.SetLink(ep, o.On); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s: %s\n", ep, map[bool]string{true: "up", false: "down"}[o.On])
		return nil
	})
}

// onInterface runs fn on the interface arg names (see openInterface), in
// its lab opened as deployed, as root.
func onInterface(m *lab.Manager, labName, arg string, fn func(*lab.Running, spec.Endpoint) error) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	r, ep, err := openInterface(m, labName, arg)
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r, ep)
}

// openInterface opens the deployed lab that has the interface arg names
// (NODE:IF, or LAB:NODE:IF; labName, when not "", picks the lab), as it
// was deployed.
func openInterface(m *lab.Manager, labName, arg string) (*lab.Running, spec.Endpoint, error) {
	if parts := strings.Split(arg, ":"); len(parts) == 3 {
		labName, arg = parts[0], parts[1]+":"+parts[2]
	}
	ep, err := spec.ParseEndpoint(arg)
	if err != nil {
		return nil, ep, cli.Exit(err.Error(), 2)
	}
	found, node, _, err := m.Store().LocateNode(labName, ep.Node)
	if err != nil {
		return nil, ep, err
	}
	ep.Node = node
	st, err := m.Recorded(found)
	if err != nil {
		return nil, ep, err
	}
	l, err := st.Spec()
	if err != nil {
		return nil, ep, err
	}
	r, err := m.Open(l)
	if err != nil {
		return nil, ep, fmt.Errorf("lab %s: %w", found, err)
	}
	return r, ep, nil
}

// flagsFirst lets the interface come before the flags of the commands that
// change a running lab (`nslab impair ns2:eth1 --delay 50ms`, as tc and ip
// are written): the flag parser stops at the first argument, so args is
// reordered to put the flags, with their values, before the arguments.
func flagsFirst(args []string, at int, cmd *cli.Command) []string {
	takesValue := valueFlags(cmd.Flags)
	head := append([]string(nil), args[:at+1]...) // nslab [global options] impair
	var flags, rest []string
	for i := at + 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(append(head, flags...), rest...)
}

// valueFlags maps every name of flags to whether it takes a value (all
// but the booleans): what a parser of raw arguments needs to know to skip
// a flag's value.
func valueFlags(flags []cli.Flag) map[string]bool {
	takesValue := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	return takesValue
}
