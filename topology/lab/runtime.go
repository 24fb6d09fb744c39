package lab

import (
	"github.com/nslab/nslab/topology/lab/live"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// Changes to a running lab that the file does not record (see package
// live), on r's handles.

// Impair makes m the impairment of interface ep (see live.Impair).
func (r *Running) Impair(ep spec.Endpoint, m *spec.Impair) error { return live.Impair(r, ep, m) }

// ClearImpair removes interface ep's impairment and reports whether it
// had one (see live.ClearImpair).
func (r *Running) ClearImpair(ep spec.Endpoint) (bool, error) { return live.ClearImpair(r, ep) }

// Impairment reads interface ep's root qdisc from the kernel (nil: none).
func (r *Running) Impairment(ep spec.Endpoint) (*qdisc.State, error) { return live.Impairment(r, ep) }

// SetLink takes interface ep down or brings it up (see live.SetLink).
func (r *Running) SetLink(ep spec.Endpoint, up bool) error { return live.SetLink(r, ep, up) }
