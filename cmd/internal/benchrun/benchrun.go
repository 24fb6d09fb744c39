// Package benchrun is what nslab's benchmark programs (cmd/nslab-bench-*)
// share: the lab file under a random name, a state directory of their
// own, and a sweep of the placed lab that keeps it deployed between
// requests. It lives under cmd/internal because only those programs use
// it.
package benchrun

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// Lab reads the lab file and renames the lab and its namespaces with a
// random name starting with letter, so that a run never meets a lab the
// user deployed.
func Lab(file, letter string) (*spec.Lab, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	name := labname.Random(letter)
	return spec.Parse(name+".yaml", labname.Rename(data, name))
}

// Manager is a lab manager with a temporary state directory; done
// removes the directory.
func Manager(prefix string) (m *lab.Manager, done func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	return &lab.Manager{StateDir: dir}, func() { _ = os.RemoveAll(dir) }, nil // a temporary directory: best effort
}

// Sweep runs one request of the lab's first traffic run (with sel's
// changes), placed, and keeps the lab: the first request deploys it, the
// others use it as deployed; the caller destroys it.
func Sweep(m *lab.Manager, l *spec.Lab, req bench.Request, sel bench.Selection) (*bench.Outcome, error) {
	t, err := bench.Traffic(l, sel)
	if err != nil {
		return nil, err
	}
	req.Lab, req.Traffic, req.Placement, req.Keep = l, t, "on", true
	return bench.Sweep(stop, m, req)
}

// stop ends the sweeps early when Main's process gets SIGINT or SIGTERM,
// so that Main destroys what they deployed: a lab under a temporary state
// directory that a killed run left would be found by no one.
var stop = context.Background()

// Fail prints err as program prog's and exits 1.
func Fail(prog string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
	os.Exit(1)
}

// Main runs a benchmark program's body: it checks the privileges, reads
// the lab, gives run a manager with a state directory of its own, then
// destroys the lab run deployed and removes the directory, and exits with
// run's code (1 also when the destroy fails). SIGINT or SIGTERM end run's
// sweeps early (see stop); the destroy still happens.
func Main(prog, file, letter string, run func(m *lab.Manager, l *spec.Lab) int) {
	if err := lab.CheckPrivileges(); err != nil {
		Fail(prog, err)
	}
	l, err := Lab(file, letter)
	if err != nil {
		Fail(prog, err)
	}
	m, done, err := Manager("nslab-" + prog + "-")
	if err != nil {
		Fail(prog, err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stop = ctx
	code := runDestroying(m, l, run)
	cancel()
	if _, err := m.Destroy(l.Name); err != nil {
		fmt.Fprintf(os.Stderr, "%s: destroy: %v\n", prog, err)
		code = 1
	}
	done()
	os.Exit(code)
}

// runDestroying is run(m, l), destroying the lab (and its duet twin)
// before a panic goes on, so that a crashed benchmark leaves nothing.
func runDestroying(m *lab.Manager, l *spec.Lab, run func(m *lab.Manager, l *spec.Lab) int) int {
	defer func() {
		if p := recover(); p != nil {
			if twin := bench.LeftTwin(m, l.Name); twin != "" {
				_, _ = m.Destroy(twin) // the panic is what to report
			}
			_, _ = m.Destroy(l.Name)
			panic(p)
		}
	}()
	return run(m, l)
}
