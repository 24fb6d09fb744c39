// Package watch samples a whole deployed lab for the live views (nslab
// top, web and metrics): every interface of every node on this host
// (IFLA_STATS64 through the node's netlink handle, its qdisc's drops),
// each CPU's time and softnet counts (machine-wide files, read in the
// caller's namespace), each node's IP MIB and connection tracking (from a
// thread inside its namespace), and the bench running on the lab, from
// the live file it publishes.
//
// A Lab holds the lab's namespaces open. Present says whether the lab is
// still the one deployed; a view closes the Lab as soon as it is not, so
// that a view left running never keeps a destroyed lab's namespaces
// alive.
package watch

import (
	"errors"
	"fmt"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/spec"
)

// Lab is a deployed lab under watch.
type Lab struct {
	Name    string
	Spec    *spec.Lab // as deployed (this host's part)
	m       *lab.Manager
	run     *lab.Running
	started time.Time // the deploy's start in its state file: a redeploy is another lab
	targets []sample.Target
	sampler *sample.Sampler
	qdiscs  time.Time // when the sampler last looked for impairments
	bench   *benchTail
}

// qdiscEvery is how often a watched lab looks again for its interfaces'
// impairments (nslab impair while a view runs): a netlink dump per
// interface, too dear for every sample.
const qdiscEvery = 5 * time.Second

// Open opens deployed lab name: its nodes' namespaces and every interface
// in them but lo.
func Open(m *lab.Manager, name string) (*Lab, error) {
	st, err := m.Recorded(name)
	if err != nil {
		return nil, err
	}
	if st.Phase != state.PhaseDeployed {
		return nil, fmt.Errorf("lab %s is %s, not deployed", name, st.Phase)
	}
	l, err := st.Spec()
	if err != nil {
		return nil, err
	}
	r, err := m.Open(l)
	if err != nil {
		return nil, err
	}
	w := &Lab{Name: name, Spec: l, m: m, run: r, started: st.Started, bench: &benchTail{path: m.LiveFile(name)}}
	if err := w.findInterfaces(); err != nil {
		r.Close()
		return nil, err
	}
	return w, nil
}

// findInterfaces lists every interface of every node but lo, node by node
// in the file's order, and opens the sampler on them.
func (w *Lab) findInterfaces() error {
	for _, n := range w.Spec.Nodes {
		node := w.run.Node(n.Name)
		if node == nil {
			continue // on another host
		}
		links, err := nlsafe.LinkList(node.Handle)
		if err != nil {
			return fmt.Errorf("lab %s: interfaces of %s: %w", w.Name, n.Name, err)
		}
		for _, l := range links {
			if a := l.Attrs(); a.Name != "lo" {
				w.targets = append(w.targets, sample.Target{Node: n.Name, Namespace: w.Spec.Namespace(n.Name), Interface: a.Name})
			}
		}
	}
	var err error
	w.sampler, err = sample.New(w.run.Opened, w.targets)
	w.qdiscs = time.Now()
	return err
}

// Targets are the interfaces sampled, in the order of Snapshot.Counters.
func (w *Lab) Targets() []sample.Target { return w.targets }

// Close releases the lab's namespaces.
func (w *Lab) Close() {
	if w.run != nil {
		w.run.Close()
		w.run = nil
	}
}

// Present reports whether the lab is still deployed as it was when
// opened: a destroyed or redeployed lab is not.
func (w *Lab) Present() bool { return w.recorded() != nil }

// recorded is the lab's state while it is deployed as it was when
// opened, nil when it is not.
func (w *Lab) recorded() *state.State {
	st, err := w.m.Recorded(w.Name)
	if err != nil || !st.Started.Equal(w.started) {
		return nil
	}
	return st
}

// NodeCounters are one node's IP MIB and connection tracking statistics
// (nil without conntrack).
type NodeCounters struct {
	MIB       map[string]uint64
	Conntrack map[string]uint64
}

// Snapshot is one reading of everything watched.
type Snapshot struct {
	Time       time.Time
	Interfaces sample.Sample // in Targets' order; At is monotonic
	CPU        map[int][]uint64
	Softnet    map[int][]uint64
	Nodes      map[string]NodeCounters
	TCP        map[string][]kstat.TCPSocket // per node: its TCP connections (sock_diag)
	NoTCP      string                       // why there are none: the kernel cannot list them
	Stopped    map[string]bool              // the nodes nslab node stop stopped
	Bench      *BenchStatus                 // nil: no bench has run on the lab since it was deployed
}

// ErrGone is returned by Read once the lab is no longer deployed; the
// Lab is closed then.
var ErrGone = errors.New("the lab is no longer deployed")

// Read takes a snapshot. The interfaces first, then the machine, then the
// nodes, so that an interval's rates and CPU use cover the same time.
func (w *Lab) Read() (*Snapshot, error) {
	st := w.recorded()
	if w.run == nil || st == nil {
		w.Close()
		return nil, fmt.Errorf("lab %s: %w", w.Name, ErrGone)
	}
	if time.Since(w.qdiscs) >= qdiscEvery {
		if err := w.sampler.FindQdiscs(); err != nil {
			return nil, fmt.Errorf("lab %s: %w", w.Name, err)
		}
		w.qdiscs = time.Now()
	}
	smp, err := w.sampler.Read()
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", w.Name, err)
	}
	s := &Snapshot{Time: time.Now(), Interfaces: smp, CPU: kstat.CPUTimes(), Softnet: kstat.Softnet(), Nodes: map[string]NodeCounters{}, TCP: map[string][]kstat.TCPSocket{},
		Stopped: map[string]bool{}}
	for _, x := range st.Stopped {
		s.Stopped[x.Node] = true
	}
	for _, n := range w.Spec.Nodes {
		node := w.run.Node(n.Name)
		if node == nil {
			continue
		}
		mib, ct, err := kstat.RouterCounters(node.NS)
		if err != nil {
			return nil, fmt.Errorf("lab %s: %w", w.Name, err)
		}
		s.Nodes[n.Name] = NodeCounters{MIB: mib, Conntrack: ct}
		switch s.TCP[n.Name], err = kstat.TCPSockets(node.NS); {
		case errors.Is(err, kstat.ErrNoTCPDiag):
			s.NoTCP = err.Error() // the rest of the view is still the kernel's
		case err != nil:
			return nil, fmt.Errorf("lab %s: %w", w.Name, err)
		}
	}
	s.Bench = w.bench.read()
	return s, nil
}
