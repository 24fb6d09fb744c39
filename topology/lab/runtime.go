package lab

import (
	"fmt"

	"github.com/nslab/nslab/topology/lab/live"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Changes to a running lab that the file does not record (see package
// live), on r's handles.

// File is the lab's file (its variant's, for a Running seen As one).
func (r *Running) File() *spec.Lab { return r.Lab }

// Handle is node's netlink handle (nil: no such node here).
func (r *Running) Handle(node string) *netlink.Handle {
	if n := r.nodes[node]; n != nil {
		return n.Handle
	}
	return nil
}

// Do runs fn on a thread in node's namespace (an error: no such node
// here).
func (r *Running) Do(node string, fn func() error) error {
	n := r.nodes[node]
	if n == nil {
		return fmt.Errorf("lab %s has no node %s on this host", r.Lab.Name, node)
	}
	return n.NS.Do(fn)
}

// Impair makes m the impairment of interface ep (see live.Impair).
func (r *Running) Impair(ep spec.Endpoint, m *spec.Impair) error { return live.Impair(r, ep, m) }

// ClearImpair removes interface ep's impairment and reports whether it
// had one (see live.ClearImpair).
func (r *Running) ClearImpair(ep spec.Endpoint) (bool, error) { return live.ClearImpair(r, ep) }

// Impairment reads interface ep's root qdisc from the kernel (nil: none).
func (r *Running) Impairment(ep spec.Endpoint) (*qdisc.State, error) { return live.Impairment(r, ep) }

// SetLink takes interface ep down or brings it up (see live.SetLink).
func (r *Running) SetLink(ep spec.Endpoint, up bool) error { return live.SetLink(r, ep, up) }
