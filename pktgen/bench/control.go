package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench/compare"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// A positive control (bench --check-sensitivity) compares variant A with
// A plus a known cost, in the set-up and on the figure of the comparison
// it vouches for: firewall rules that match nothing, on every node that
// forwards. A figure that does not move for it cannot say "no change" of
// anything; one that does may, for a day, on the same machine, lab file
// and traffic (the control is saved, and found again).

// runControl measures the positive control: variant A (the first of
// req.Variants, or base) against A plus the known cost, as req would
// compare its variants, and saves what it found.
func (req Request) runControl(ctx context.Context, m *lab.Manager, r *lab.Running, out *Outcome) (*report.Control, error) {
	base := spec.BaseVariant
	if len(req.Variants) > 0 {
		base = req.Variants[0]
	}
	withControl := *req.Lab // the caller's lab keeps its variants
	withControl.Variants = slices.Clone(req.Lab.Variants)
	name := compare.ControlName(&withControl)
	nodes, err := compare.AddControl(&withControl, base, name, req.controlRules())
	if err != nil {
		return nil, err
	}
	sub := req
	sub.Lab = &withControl
	sub.Variants, sub.CheckSensitivity, sub.controlName, sub.controlBase = []string{base, name}, false, name, base
	req.progress("positive control: %s against %s with %d firewall rules that match nothing on %s\n", base, base, req.controlRules(), strings.Join(nodes, ", "))
	ctl := &Outcome{}
	if err := sub.eachVariant(ctx, m, r, ctl); err != nil {
		return nil, fmt.Errorf("the positive control: %w", err)
	}
	out.Reports = append(out.Reports, ctl.Reports...)
	out.controlComparisons = ctl.Comparisons
	if len(ctl.Comparisons) == 0 || ctl.Comparisons[0].Decision == nil {
		return nil, errors.New("the positive control made no decision")
	}
	c := req.controlOf(ctl.Comparisons[0].Decision, ctl.Reports, base, nodes)
	if err := compare.SaveControl(c); err != nil {
		req.progress("the positive control was not saved: %v\n", err)
	}
	return c, nil
}

// controlRules is how many rules the control adds.
func (req Request) controlRules() int {
	if req.ControlRules > 0 {
		return req.ControlRules
	}
	return compare.DefaultControlRules
}

// controlOf is what the control decision d says of the set-up: whether the
// known cost was seen, and at the size expected from A's measured cost
// per packet.
func (req Request) controlOf(d *report.Decision, reps []*report.Report, base string, nodes []string) *report.Control {
	c := &report.Control{Rules: req.controlRules(), Nodes: nodes, Base: base, Figure: d.Figure, Setup: d.Setup,
		Outcome: d.Outcome, Estimate: d.Estimate, CILow: d.CILow, CIHigh: d.CIHigh, RuleNs: compare.ControlRuleNs,
		When: time.Now().UTC(), Machine: compare.Machine(), LabSHA256: req.Lab.SHA256, Key: req.controlKey(d.Figure)}
	c.Seen = d.Outcome == stats.Different && d.Faster < 0
	var costs []float64
	for _, r := range reps {
		if r.Variant == base && r.Cost != nil && r.Cost.NsPerPacket > 0 {
			costs = append(costs, r.Cost.NsPerPacket)
		}
	}
	if len(costs) > 0 {
		a, add := stats.Median(costs), float64(c.Rules)*compare.ControlRuleNs
		c.ExpectedLow, c.ExpectedHigh = compare.ExpectedChange(d.Figure, a, add/2), compare.ExpectedChange(d.Figure, a, 2*add)
		if c.ExpectedLow > c.ExpectedHigh {
			c.ExpectedLow, c.ExpectedHigh = c.ExpectedHigh, c.ExpectedLow
		}
		c.SizeAsExpected = c.ExpectedHigh != 0 && d.CILow <= c.ExpectedHigh && d.CIHigh >= c.ExpectedLow
	}
	c.Sentence = compare.ControlSentence(c, d)
	return c
}

// controlKey names the set-up a control vouches for: the lab file, the
// traffic run as offered, the figure, duet or not, and the machine.
func (req Request) controlKey(figure string) string {
	t := req.Traffic
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%v|%d|%d|%s|%v|%s", req.Lab.SHA256, t.Name, t.Frames, t.RatePPS, t.RateMbps, figure, req.Duet, compare.Machine())
	return hex.EncodeToString(h.Sum(nil))[:16]
}
