// Package auto picks the traffic engine for a run: the kernel's pktgen when
// the sender's namespace has it, nslab's userspace engine otherwise, and
// says why, in the words of the probe that decided.
package auto

import (
	"context"
	"errors"
	"fmt"
	"github.com/nslab/nslab/internal/caps"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/kernel"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/rootless"
)

// Chooser chooses engines. Its zero value probes the kernel for real.
type Chooser struct {
	// Probe reports whether kernel pktgen can run in a namespace (nil, or
	// an error wrapping kernel.ErrNoPktgen that says why not); nil:
	// kernel.Available. Tests replace it.
	Probe func(n *ns.NS) error
	// LiveProbe reports whether the kernel runs the XDP engine's
	// live-frame call in a namespace (nil, or an error that wraps
	// userspace.ErrLiveFramesRefused when the machine's policy refuses
	// it); nil: userspace.ProbeLiveFrames on a thread in it. Tests
	// replace it.
	LiveProbe func(n *ns.NS) error
	// Caps are what this process may do here; nil: caps.Detect.
	Caps *caps.Capabilities
}

// Choose returns the engine that name asks for (auto, pktgen, userspace
// or xdp) for sends from namespace sender, and why it is that one. It
// enters sender only to probe for pktgen (auto).
func (c Chooser) Choose(name string, sender *ns.NS) (engine.Engine, string, error) {
	if caps.Or(c.Caps).Rootless {
		return chooseRootless(name, sender)
	}
	switch name {
	case "pktgen":
		return kernel.Engine{}, "asked for", nil
	case "userspace":
		return userspace.Engine{}, "asked for", nil
	case "xdp":
		return c.chooseXDP(sender)
	case "", "auto":
	default:
		return nil, "", fmt.Errorf("engine %q: use auto, pktgen, userspace or xdp", name)
	}
	probe := c.Probe
	if probe == nil {
		probe = kernel.Available
	}
	err := probe(sender)
	var missing *kernel.MissingError
	switch {
	case err == nil:
		return kernel.Engine{}, fmt.Sprintf("kernel pktgen is available in %s", sender.Name), nil
	case errors.As(err, &missing):
		return userspace.Engine{}, fmt.Sprintf("kernel pktgen is not available in %s (%s), so the userspace engine ran", sender.Name, missing.Short()), nil
	case errors.Is(err, kernel.ErrNoPktgen):
		return userspace.Engine{}, fmt.Sprintf("kernel pktgen is not available in %s (%v), so the userspace engine ran", sender.Name, err), nil
	}
	return nil, "", fmt.Errorf("probe for kernel pktgen in %s: %w", sender.Name, err)
}

// chooseXDP is the XDP engine when the kernel runs its live-frame call in
// sender (probed there, nothing sent), and the userspace engine, with the
// kernel's reason, when the machine's policy refuses it. Any other failure
// of the probe is an error.
func (c Chooser) chooseXDP(sender *ns.NS) (engine.Engine, string, error) {
	probe := c.LiveProbe
	if probe == nil {
		probe = func(n *ns.NS) error { return n.Do(userspace.ProbeLiveFrames) }
	}
	err := probe(sender)
	switch {
	case err == nil:
		return userspace.XDP{}, "asked for", nil
	case errors.Is(err, userspace.ErrLiveFramesRefused):
		return userspace.Engine{}, fmt.Sprintf("the XDP engine was asked for, but %v; so the userspace engine (AF_PACKET) ran", err), nil
	}
	return nil, "", fmt.Errorf("XDP engine in %s: %w", sender.Name, err)
}

// chooseRootless is Choose in a rootless lab: kernel pktgen and the XDP
// engine need the host's root (pktgen's threads are the host's, XDP is
// BPF), so auto is the userspace engine and the others are refused.
func chooseRootless(name string, sender *ns.NS) (engine.Engine, string, error) {
	switch name {
	case "", "auto":
		return userspace.Engine{}, fmt.Sprintf("this lab is rootless, and kernel pktgen in %s needs root on the host, so the userspace engine ran", sender.Name), nil
	case "userspace":
		return userspace.Engine{}, "asked for", nil
	case "pktgen":
		return nil, "", rootless.Refuse("kernel pktgen (engine pktgen)", "use engine userspace")
	case "xdp":
		return nil, "", rootless.Refuse("the XDP engine (engine xdp, a BPF program)", "use engine userspace")
	}
	return nil, "", fmt.Errorf("engine %q: use auto or userspace (this lab is rootless)", name)
}

// Engine chooses for every run it is given, and puts the reason in the
// result. It implements engine.Engine; bench chooses once instead.
type Engine struct{ Chooser }

var _ engine.Engine = Engine{}

// Name implements engine.Engine.
func (Engine) Name() string { return "auto" }

// Run implements engine.Engine: it chooses, runs, and records why.
func (e Engine) Run(ctx context.Context, j engine.Job) (*engine.Result, error) {
	eng, reason, err := e.Choose("auto", j.Sender)
	if err != nil {
		return nil, err
	}
	res, err := eng.Run(ctx, j)
	if res != nil {
		res.Reason = reason
	}
	return res, err
}
