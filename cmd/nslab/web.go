package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// webOptions is nslab web: the live page of a lab, and its metrics.
type webOptions struct {
	Manager  *lab.Manager
	Lab      string // "": the one deployed
	Listen   string
	Interval time.Duration
	Err      io.Writer
}

// listenFlag is --listen for the verbs that serve; loopback by default.
func listenFlag(def string) *cli.StringFlag {
	return &cli.StringFlag{Name: "listen", Value: def, Usage: "serve on `ADDRESS:PORT`; another address than loopback only when named here (0.0.0.0:PORT: every address)"}
}

func webCommand(run func(context.Context, *webOptions) error) *cli.Command {
	flags := []cli.Flag{
		listenFlag("127.0.0.1:8080"),
		asDeployedFlag(),
		&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "sample every `D` (100ms and up)"},
	}
	return command("web", "serve a live page of a deployed lab: its drawing with every link's rate and drops, each node's CPU, the bench that runs and its report; and /metrics", "[LAB]", flags, func(c *cli.Context) (*webOptions, error) {
		o := &webOptions{Manager: manager(c), Listen: c.String("listen"), Interval: c.Duration("interval"), Err: c.App.ErrWriter}
		if o.Interval < 100*time.Millisecond {
			return nil, cli.Exit("--interval: at least 100ms", 2)
		}
		if err := checkListen(o.Listen, o.Err); err != nil {
			return nil, err
		}
		var err error
		o.Lab, err = watchedLabArg(c)
		return o, err
	}, run, runWeb)
}

// checkListen refuses an address without a host (":8080" listens on
// every address, which should be asked for by name) and says so when the
// address named is not loopback.
func checkListen(addr string, w io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.Exit(fmt.Sprintf("--listen %s: give ADDRESS:PORT, e.g. 127.0.0.1:8080", addr), 2)
	}
	if host == "" {
		return cli.Exit(fmt.Sprintf("--listen %s names no address and would listen on all of them: give 127.0.0.1%s for this machine alone, or 0.0.0.0%s to be reached from other machines", addr, addr, addr), 2)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(w, "nslab: listening on %s, as --listen says: other machines can reach it, and nothing asks them who they are\n", addr)
	}
	return nil
}

// webHelperName is the program that serves the page and the metrics
// (cmd/nslab-web): the Prometheus client library it links would cost
// every nslab command milliseconds at start.
const webHelperName = "nslab-web"

// runWeb checks what can be checked here and becomes the helper.
func runWeb(_ context.Context, o *webOptions) error {
	name, err := labToWatch(o.Manager, o.Lab)
	if err != nil {
		return err
	}
	if _, err := o.Manager.Recorded(name); err != nil {
		return err
	}
	return execHelper(o.Manager, "-listen", o.Listen, "-lab", name, "-interval", o.Interval.String())
}

// execHelper runs nslab-web with args in this process's place, told
// where m's labs are.
func execHelper(m *lab.Manager, args ...string) error {
	var where []string
	if m.StateDir != "" {
		where = append(where, "-state-dir", m.StateDir)
	}
	if m.NetnsDir != "" {
		where = append(where, "-netns-dir", m.NetnsDir)
	}
	return execProgram(webHelperName, append(where, args...)...)
}

// execProgram runs helper program name with args in this process's
// place: the same pid, which Ctrl-C and SIGTERM reach. It returns only
// when it cannot.
func execProgram(name string, args ...string) error {
	helper, err := helperPath(name)
	if err != nil {
		return err
	}
	return fmt.Errorf("run %s: %w", helper, syscall.Exec(helper, append([]string{name}, args...), os.Environ()))
}

// metricsOptions is nslab metrics: the labs' counters for Prometheus.
type metricsOptions struct {
	Manager *lab.Manager
	Labs    []string // none: every deployed lab
	Listen  string
	Once    bool // print them once instead of serving
	Err     io.Writer
}

func metricsCommand(run func(context.Context, *metricsOptions) error) *cli.Command {
	flags := []cli.Flag{listenFlag("127.0.0.1:9477"),
		&cli.BoolFlag{Name: "once", Usage: "write the metrics once, in Prometheus's text format, and exit"}, asDeployedFlag()}
	return command("metrics", "serve deployed labs' counters at /metrics for Prometheus (OpenMetrics): interfaces, softnet and CPU, IP MIB, conntrack, qdisc drops, a running bench", "[LAB...]", flags, func(c *cli.Context) (*metricsOptions, error) {
		o := &metricsOptions{Manager: manager(c), Listen: c.String("listen"), Once: c.Bool("once"), Err: c.App.ErrWriter}
		for _, arg := range c.Args().Slice() { // a lab's name, or its file
			if l, err := spec.ReadFile(arg); err == nil {
				if arg, err = identifiedName(c, o.Manager, l); err != nil {
					return nil, err
				}
			}
			o.Labs = append(o.Labs, arg)
		}
		if o.Once {
			return o, nil
		}
		return o, checkListen(o.Listen, o.Err)
	}, run, runMetrics)
}

func runMetrics(_ context.Context, o *metricsOptions) error {
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	for _, name := range o.Labs {
		if _, err := o.Manager.Recorded(name); err != nil {
			return err
		}
	}
	if o.Once {
		return execHelper(o.Manager, append([]string{"-metrics", "-once"}, o.Labs...)...)
	}
	return execHelper(o.Manager, append([]string{"-listen", o.Listen, "-metrics"}, o.Labs...)...)
}
