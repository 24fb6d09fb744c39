package lab

import (
	"errors"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// viewQueue makes the nodes' views: each when its step runs, or, for
// those queued by ahead once every namespace of the run exists, on a
// goroutine of its own that makes them in order while the deploy goes on
// with the links, addresses and routes (a view needs nothing of the node
// but its namespace, and the views take a fifth of a deploy's time; the
// two run on the machine's two CPUs). The view steps then wait for their
// own. The maker's thread is the only one that makes views either way.
type viewQueue struct {
	maker   *ns.ViewMaker
	pending []viewJob
	results map[string]chan error // node -> its view's result, once queued
	quit    chan struct{}
	exited  chan struct{}
}

// viewJob is one view to make.
type viewJob struct {
	n      *spec.Node
	setup  ns.ViewSetup
	hosts  []byte
	ready  chan struct{} // closed once the node's namespace exists; nil: it does
	result chan error
}

// errStopped is the result of a view the queue was stopped before.
var errStopped = errors.New("not made: the deploy stopped first")

// ahead queues node n's view (see deployer.startAhead, which then
// launches the queue).
func (q *viewQueue) ahead(d *deployer, n *spec.Node, setup ns.ViewSetup, hosts []byte) {
	if q.results == nil {
		q.results = map[string]chan error{}
	}
	j := viewJob{n: n, setup: setup, hosts: hosts, ready: d.nsReady[n.Name], result: make(chan error, 1)}
	q.results[n.Name] = j.result
	q.pending = append(q.pending, j)
}

// launch starts making the queued views on a goroutine of their own.
func (q *viewQueue) launch(d *deployer) {
	if len(q.pending) == 0 || q.exited != nil {
		return
	}
	jobs := q.pending
	q.pending = nil
	q.quit, q.exited = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(q.exited)
		for _, j := range jobs {
			ready := j.ready
			if ready == nil {
				ready = closed
			}
			select {
			case <-q.quit:
				j.result <- errStopped
				continue
			case <-ready:
			}
			j.result <- d.makeView(j.n, j.setup, j.hosts)
		}
	}()
}

// close stops making views (the one under way is finished), waits for
// the goroutine, forgets what was queued (a failed apply's taking back
// makes its own views again), and ends the maker's thread.
func (q *viewQueue) close() {
	if q.exited != nil {
		close(q.quit)
		<-q.exited
		q.exited = nil
	}
	q.pending, q.results = nil, nil
	if q.maker != nil {
		q.maker.Close()
		q.maker = nil
	}
}

// awaitView is node n's view step: it waits for the view queued ahead,
// or makes it now.
func (d *deployer) awaitView(n *spec.Node, setup ns.ViewSetup, hosts []byte) error {
	if r, ok := d.views.results[n.Name]; ok {
		delete(d.views.results, n.Name)
		return <-r
	}
	return d.makeView(n, setup, hosts)
}

// closed is a channel that never blocks.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
