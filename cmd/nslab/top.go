package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/watch"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// topOptions is nslab top: a deployed lab's counters, live in the
// terminal, or one reading for scripts.
type topOptions struct {
	Manager  *lab.Manager
	Lab      string
	Interval time.Duration
	Once     bool
	Format   string // with Once: table or json
	Sort     string // watch.SortKeys
	In       *os.File
	Out      io.Writer
}

func topCommand(run func(context.Context, *topOptions) error) *cli.Command {
	flags := []cli.Flag{
		&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "refresh every `D` (100ms and up)"},
		&cli.StringFlag{Name: "sort", Value: "node", Usage: "sort interfaces by node (the file's order), rx, tx or drops; keys n, r, t, d change it"},
		&cli.BoolFlag{Name: "once", Usage: "print one reading (over one interval) and exit"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "with --once: table or json"},
		asDeployedFlag(),
	}
	return command("top", "watch a deployed lab live: every interface's rates and drops, each CPU's softirq, steal and backlog drops, each node's forwarding and conntrack, and the TCP connections moving data (rates, retransmissions, cwnd, RTT)", "[LAB]", flags, readTop, run, runTop)
}

func readTop(c *cli.Context) (*topOptions, error) {
	o := &topOptions{Manager: manager(c), Interval: c.Duration("interval"), Once: c.Bool("once"), Format: c.String("format"), Sort: c.String("sort"), In: os.Stdin, Out: c.App.Writer}
	if o.Interval < 100*time.Millisecond {
		return nil, cli.Exit("--interval: at least 100ms", 2)
	}
	if o.Format != "table" && o.Format != "json" {
		return nil, cli.Exit(fmt.Sprintf("--format %s: use table or json", o.Format), 2)
	}
	if !slices.Contains(watch.SortKeys, o.Sort) {
		return nil, cli.Exit(fmt.Sprintf("--sort %s: use %s", o.Sort, strings.Join(watch.SortKeys, ", ")), 2)
	}
	var err error
	o.Lab, err = watchedLabArg(c)
	return o, err
}

// watchedLabArg is the lab a live view watches: the LAB operand (a lab's
// name, or its file), or the one lab deployed.
func watchedLabArg(c *cli.Context) (string, error) {
	if c.NArg() > 1 {
		return "", cli.Exit("give one LAB", 2)
	}
	if arg := c.Args().First(); arg != "" {
		if l, err := spec.ReadFile(arg); err == nil {
			return identifiedName(c, manager(c), l)
		}
		return arg, nil
	}
	return "", nil // the one deployed (onlyLab), found when run
}

// onlyLab is the name of the one lab deployed here.
func onlyLab(m *lab.Manager) (string, error) {
	list, err := m.Store().List()
	if err != nil {
		return "", err
	}
	var names []string
	for _, s := range list {
		if s.Phase == state.PhaseDeployed {
			names = append(names, s.Lab)
		}
	}
	switch len(names) {
	case 0:
		return "", errors.New("no lab is deployed: deploy one first (nslab deploy FILE)")
	case 1:
		return names[0], nil
	}
	return "", cli.Exit(fmt.Sprintf("%d labs are deployed (%s): name one", len(names), strings.Join(names, ", ")), 2)
}

// labToWatch checks the privileges a live view needs and names the lab it
// watches: name, or the one deployed when name is "".
func labToWatch(m *lab.Manager, name string) (string, error) {
	if err := lab.CheckPrivileges(); err != nil {
		return "", err
	}
	if name != "" {
		return name, nil
	}
	return onlyLab(m)
}

// openWatched opens the lab named, or the one deployed.
func openWatched(m *lab.Manager, name string) (*watch.Lab, error) {
	name, err := labToWatch(m, name)
	if err != nil {
		return nil, err
	}
	return watch.Open(m, name)
}

func runTop(ctx context.Context, o *topOptions) error {
	w, err := openWatched(o.Manager, o.Lab)
	if err != nil {
		return err
	}
	defer w.Close()
	if o.Once {
		return topOnce(ctx, w, o)
	}
	keys, restore := readKeys(o.In)
	defer restore()
	return topLoop(ctx, w, o, keys)
}

// topOnce prints one reading over one interval.
func topOnce(ctx context.Context, w *watch.Lab, o *topOptions) error {
	a, err := w.Read()
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.Interval):
	}
	b, err := w.Read()
	if err != nil {
		return err
	}
	v := w.Delta(a, b)
	v.Sort(o.Sort)
	if o.Format == "json" {
		return writeJSON(o.Out, v)
	}
	v.WriteTable(o.Out)
	return nil
}

// topLoop redraws the screen every interval, and at once on a key that
// changes the sort, until q, Ctrl-C or the lab's destroy.
func topLoop(ctx context.Context, w *watch.Lab, o *topOptions, keys <-chan byte) error {
	prev, err := w.Read()
	if err != nil {
		return err
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	var last *watch.View
	for {
		select {
		case <-ctx.Done():
			return nil
		case k := <-keys:
			if k == 'q' {
				return nil
			}
			if s, ok := sortKey[k]; ok && last != nil {
				if k == 's' {
					s = nextSort(o.Sort)
				}
				o.Sort = s
				drawTop(o, last)
			}
			continue
		case <-tick.C:
		}
		cur, err := w.Read()
		if errors.Is(err, watch.ErrGone) {
			fmt.Fprintf(o.Out, "\nlab %s was destroyed\n", w.Name)
			return nil
		}
		if err != nil {
			return err
		}
		last, prev = w.Delta(prev, cur), cur
		drawTop(o, last)
	}
}

// sortKey maps a key press to a sort; s cycles through them.
var sortKey = map[byte]string{'n': "node", 'r': "rx", 't': "tx", 'd': "drops", 's': ""}

// nextSort is the sort after key in watch.SortKeys.
func nextSort(key string) string {
	for i, k := range watch.SortKeys {
		if k == key {
			return watch.SortKeys[(i+1)%len(watch.SortKeys)]
		}
	}
	return watch.SortKeys[0]
}

// drawTop clears the terminal and draws v sorted as o says.
func drawTop(o *topOptions, v *watch.View) {
	v.Sort(o.Sort)
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	fmt.Fprintf(&b, "nslab top: lab %s  %s  every %s  sort: %s  (keys: n node, r rx, t tx, d drops, q quit)\n",
		v.Lab, v.Time.Format("15:04:05"), o.Interval, o.Sort)
	v.WriteTable(&b)
	_, _ = io.WriteString(o.Out, b.String()) // a terminal: nothing to do when it is gone
}

// readKeys puts terminal in into its raw mode (no echo, a key at a time)
// and sends each key pressed; restore puts the terminal back. A standard
// input that is not a terminal gives no keys.
func readKeys(in *os.File) (<-chan byte, func()) {
	ch := make(chan byte, 8)
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return ch, func() {}
	}
	raw := *old
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(fd, unix.TCSETS, &raw) != nil {
		return ch, func() {}
	}
	go func() {
		buf := make([]byte, 1)
		for {
			if n, err := in.Read(buf); err != nil || n == 0 {
				return
			}
			ch <- buf[0]
		}
	}()
	return ch, func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}
