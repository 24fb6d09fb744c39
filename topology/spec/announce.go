package spec

import (
	"sync"

	"github.com/nslab/nslab/topology/frrconf"
)

// announcedCache holds what each node's routing configuration announces,
// read once per lab: check asks for every pair whose route a daemon has
// not learned, which in a lab of a thousand routers before it converges
// is every pair.
type announcedCache struct {
	mu     sync.Mutex
	byNode map[*Node]frrconf.Announced // by pointer: a copy of a node may differ
}

// cacheMade guards the making of a lab's cache, which a lab that was not
// parsed (a test's, a model built in code) gets on first use.
var cacheMade sync.Mutex

// announcedCache is l's cache, made on first use.
func (l *Lab) announcedCache() *announcedCache {
	cacheMade.Lock()
	defer cacheMade.Unlock()
	if l.announced == nil {
		l.announced = &announcedCache{byNode: map[*Node]frrconf.Announced{}}
	}
	return l.announced
}

// Announces is what node n's routing configuration announces to its
// neighbours (see frrconf): for a node running FRR, what its frr.conf or
// its daemons' own files say; for one running BIRD, or FRR with no
// configuration nslab can read, anything (All). n runs routing daemons.
func (l *Lab) Announces(n *Node) frrconf.Announced {
	c := l.announcedCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.byNode[n]; ok {
		return a
	}
	var a frrconf.Announced
	texts := n.FRRConfigs()
	switch {
	case n.BIRD != nil:
		a = frrconf.Announced{All: true, Why: "BIRD, whose bird.conf nslab does not read"}
	case len(texts) == 0:
		a = frrconf.Announced{All: true, Why: "FRR with no configuration nslab can read"}
	default:
		a = frrconf.Parse(texts...)
	}
	c.byNode[n] = a
	return a
}
