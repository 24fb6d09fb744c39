// Package auto picks the traffic engine for a run: the kernel's pktgen when
// the sender's namespace has it, nslab's userspace engine otherwise, and
// records why in the result.
package auto

import (
	"context"
	"errors"
	"fmt"

	"github.com/nslab/nslab/pktgen"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/userspace"
)

// Engine chooses an engine per run. It implements engine.Engine.
type Engine struct{}

// Name implements engine.Engine.
func (Engine) Name() string { return "auto" }

// Select returns the engine for the job and the reason for the choice.
func Select(j engine.Job) (engine.Engine, string, error) {
	n, err := j.OpenSender()
	if err != nil {
		return nil, "", err
	}
	defer n.Close()
	err = pktgen.Available(n, j.Namespace)
	switch {
	case err == nil:
		return pktgen.KernelEngine{}, fmt.Sprintf("kernel pktgen is available in %s", j.Namespace), nil
	case errors.Is(err, pktgen.ErrNoPktgen):
		return userspace.Engine{}, "kernel pktgen is not available (" + shortReason() + "), so the userspace engine ran", nil
	}
	return nil, "", err
}

// shortReason says in a few words why pktgen is missing.
func shortReason() string {
	return "the kernel has no CONFIG_NET_PKTGEN and no pktgen module"
}

// Run implements engine.Engine: it selects, runs, and puts the reason in
// the result.
func (Engine) Run(ctx context.Context, j engine.Job) (*engine.Result, error) {
	e, reason, err := Select(j)
	if err != nil {
		return nil, err
	}
	res, err := e.Run(ctx, j)
	if res != nil {
		res.Reason = reason
	}
	return res, err
}
