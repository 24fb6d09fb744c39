package spec

import (
	"net/netip"
	"sync"

	"github.com/nslab/nslab/topology/frrconf"
)

// learnedCache holds what each router of the lab can learn a route to
// (frrconf.Learn), worked out once per reading of the lab: check asks
// for every pair whose route no daemon has installed, which in a lab of a
// thousand routers before it converges is every pair.
type learnedCache struct {
	mu      sync.Mutex
	learned *frrconf.Learned // nil: not worked out since the lab was last read
}

// cacheMade guards the making of a lab's cache, which a lab gets on
// first use.
var cacheMade sync.Mutex

// learnedCache is l's cache, made on first use.
func (l *Lab) learnedCache() *learnedCache {
	cacheMade.Lock()
	defer cacheMade.Unlock()
	if l.learned == nil {
		l.learned = &learnedCache{}
	}
	return l.learned
}

// Learns reports whether node router's routing daemons can learn a route
// to dst, by what the lab's routing configurations announce and where
// their protocols carry it (frrconf.Learn over the lab's nodes that run
// routing and are not stopped, with their addresses as last read), and
// when they cannot, says why. A node running BIRD, or FRR with no
// configuration nslab can read, may announce anything.
func (l *Lab) Learns(router string, dst netip.Addr) (bool, string) {
	m := l.Model() // a part of a lab that spans hosts: its routers are the whole lab's
	c := m.learnedCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.learned == nil {
		c.learned = frrconf.Learn(m.routers())
	}
	return c.learned.Learns(router, dst)
}

// ForgetLearned drops what Learns worked out: the lab's addresses, or
// which nodes are stopped, were read again.
func (l *Lab) ForgetLearned() {
	c := l.Model().learnedCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.learned = nil
}

// routers are the lab's nodes that run routing daemons and are not
// stopped, as frrconf reads them.
func (l *Lab) routers() []frrconf.Router {
	var out []frrconf.Router
	for _, n := range l.Nodes {
		if n.Stopped || !n.RunsRouting() {
			continue
		}
		r := frrconf.Router{Name: n.Name}
		for _, i := range n.Interfaces {
			for _, p := range i.Addrs() {
				r.Addrs = append(r.Addrs, frrconf.Address{Interface: i.Name, Prefix: p})
			}
		}
		for _, b := range n.Bridges {
			for _, p := range b.Addrs() {
				r.Addrs = append(r.Addrs, frrconf.Address{Interface: b.Name, Prefix: p})
			}
		}
		texts := n.FRRConfigs()
		switch {
		case n.BIRD != nil:
			r.Config = frrconf.Config{All: true, Why: "it runs BIRD, whose bird.conf nslab does not read"}
		case len(texts) == 0:
			r.Config = frrconf.Config{All: true, Why: "it runs FRR with no configuration nslab can read"}
		default:
			r.Config = frrconf.Parse(texts...)
		}
		out = append(out, r)
	}
	return out
}
