package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/pktgen/stats"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// A positive control (bench --check-sensitivity) compares variant A with
// A plus a known cost, in the set-up and on the figure of the comparison
// it vouches for: firewall rules that match nothing, on every node that
// forwards. A figure that does not move for it cannot say "no change" of
// anything; one that does may, for a day, on the same machine, lab file
// and traffic (the control is saved, and found again).

// Positive control defaults.
const (
	// DefaultControlRules is how many rules the control adds: 8 rules of
	// about ControlRuleNs each are a change of 20 to 40% of a router's
	// cost per packet here, which every set-up that can see the routers'
	// cost sees in a few pairs.
	DefaultControlRules = 8
	// ControlRuleNs is what one such rule (ip saddr X/24 drop, in an inet
	// forward chain) costs a router per packet on our machines: the rule
	// count's dose response of make bench-compare, 2026-12. The expected
	// change of a control is taken from half to twice it: these machines'
	// speed drifts that much over a day.
	ControlRuleNs = 56.0
	// controlMaxAge is how long a saved control vouches for its set-up.
	controlMaxAge = 24 * time.Hour
)

// controlName is the control variant's name: "control", unless the file
// has a variant of that name.
func controlName(l *spec.Lab) string {
	name := "control"
	for l.Variant(name) != nil && name != spec.BaseVariant {
		name += "-nslab"
	}
	return name
}

// addControl adds to lab l a variant named name: variant base with rules
// firewall rules that match nothing (drop from a benchmarking prefix no
// address of the lab is in) on every node that forwards. It returns those
// nodes. The variant's lab is a copy of l's file parsed anew, so the
// lab's own variants stay as they are.
func addControl(l *spec.Lab, base, name string, rules int) ([]string, error) {
	fresh, err := spec.Parse(l.File, l.Source)
	if err != nil {
		return nil, fmt.Errorf("the positive control's copy of lab %s: %w", l.Name, err)
	}
	if l.Unplaced != "" {
		fresh.Unplace(l.Unplaced)
	}
	orig, bv := l.Variant(base), fresh.Variant(base)
	if orig == nil || bv == nil {
		return nil, fmt.Errorf("the positive control: lab %s has no variant %s", l.Name, base)
	}
	if err := noneIn(l); err != nil {
		return nil, err
	}
	var nodes []string
	for _, n := range bv.Lab.Nodes {
		if !n.Forwarding.IPv4 && !n.Forwarding.IPv6 {
			continue
		}
		path := fmt.Sprintf("variants.%s.%s.firewall", name, n.Name)
		if n.Firewall == nil {
			n.Firewall = &spec.Firewall{Policy: spec.Accept, Path: path}
		}
		for i := range rules {
			n.Firewall.Rules = append(n.Firewall.Rules, &spec.FilterRule{Verdict: spec.Drop,
				Match: spec.Match{From: controlPrefix(i, n.Forwarding.IPv6 && !n.Forwarding.IPv4)}, Path: fmt.Sprintf("%s.rules[+%d]", path, i)})
		}
		nodes = append(nodes, n.Name)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("the positive control adds firewall rules to the nodes that forward, and no node of lab %s forwards (forwarding: true)", l.Name)
	}
	changed := slices.Clone(orig.Nodes)
	for _, n := range nodes {
		if !slices.Contains(changed, n) {
			changed = append(changed, n)
		}
	}
	l.Variants = append(l.Variants, &spec.Variant{Name: name, Lab: bv.Lab, Nodes: changed, Before: orig.Before, After: orig.After})
	return nodes, nil
}

// controlPrefix is the i-th prefix the control's rules drop: 198.18.i.0/24
// (RFC 2544's benchmarking range), or 2001:2:0:i::/64 (RFC 5180's).
func controlPrefix(i int, v6 bool) netip.Prefix {
	if v6 {
		return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0, 2, 0, 0, byte(i >> 8), byte(i)}), 64)
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i), 0}), 24)
}

// controlRanges are the benchmarking ranges the control's rules drop
// from (RFC 2544's and RFC 5180's): no lab should use them.
var controlRanges = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("2001:2::/48")}

// noneIn refuses a lab with an address in the control's ranges (its
// rules would then match something).
func noneIn(l *spec.Lab) error {
	for a, by := range l.AddressOwners() {
		for _, r := range controlRanges {
			if r.Contains(a) {
				return fmt.Errorf("the positive control's rules drop from %s and %s, and %s:%s has %s in %s: they would match the lab's own packets", controlRanges[0], controlRanges[1], by.Node, by.Interface, a, r)
			}
		}
	}
	return nil
}

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
	name := controlName(&withControl)
	nodes, err := addControl(&withControl, base, name, req.controlRules())
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
	if err := saveControl(c); err != nil {
		req.progress("the positive control was not saved: %v\n", err)
	}
	return c, nil
}

// controlRules is how many rules the control adds.
func (req Request) controlRules() int {
	if req.ControlRules > 0 {
		return req.ControlRules
	}
	return DefaultControlRules
}

// controlOf is what the control decision d says of the set-up: whether the
// known cost was seen, and at the size expected from A's measured cost
// per packet.
func (req Request) controlOf(d *report.Decision, reps []*report.Report, base string, nodes []string) *report.Control {
	c := &report.Control{Rules: req.controlRules(), Nodes: nodes, Base: base, Figure: d.Figure, Setup: d.Setup,
		Outcome: d.Outcome, Estimate: d.Estimate, CILow: d.CILow, CIHigh: d.CIHigh, RuleNs: ControlRuleNs,
		When: time.Now().UTC(), Machine: machine(), LabSHA256: req.Lab.SHA256, Key: req.controlKey(d.Figure)}
	c.Seen = d.Outcome == stats.Different && d.Faster < 0
	var costs []float64
	for _, r := range reps {
		if r.Variant == base && r.Cost != nil && r.Cost.NsPerPacket > 0 {
			costs = append(costs, r.Cost.NsPerPacket)
		}
	}
	if len(costs) > 0 {
		a, add := stats.Median(costs), float64(c.Rules)*ControlRuleNs
		c.ExpectedLow, c.ExpectedHigh = expectedChange(d.Figure, a, add/2), expectedChange(d.Figure, a, 2*add)
		if c.ExpectedLow > c.ExpectedHigh {
			c.ExpectedLow, c.ExpectedHigh = c.ExpectedHigh, c.ExpectedLow
		}
		c.SizeAsExpected = c.ExpectedHigh != 0 && d.CILow <= c.ExpectedHigh && d.CIHigh >= c.ExpectedLow
	}
	c.Sentence = controlSentence(c, d)
	return c
}

// expectedChange is the change in % that add ns more per packet make to
// figure, for routers that cost a ns a packet: a cost figure rises by
// add/a; the rate of routers that are the limit falls to a/(a+add).
func expectedChange(figure string, a, add float64) float64 {
	if slices.Contains(rateFigures, figure) {
		return 100 * (a/(a+add) - 1)
	}
	if slices.Contains(costFigures, figure) {
		return 100 * add / a
	}
	return 0
}

// controlSentence says what the control found, in a line.
func controlSentence(c *report.Control, d *report.Decision) string {
	what := fmt.Sprintf("%d firewall rules that match nothing added to %s on %s", c.Rules, c.Base, strings.Join(c.Nodes, ", "))
	expected := ""
	if c.ExpectedHigh != 0 || c.ExpectedLow != 0 {
		expected = fmt.Sprintf("; expected %+.1f%% .. %+.1f%% (%.0f ns a rule, from half to twice it)", c.ExpectedLow, c.ExpectedHigh, c.RuleNs)
	}
	switch {
	case c.Seen && (c.SizeAsExpected || expected == ""):
		return fmt.Sprintf("seen: %s moved %+.2f%% (interval %+.2f%% .. %+.2f%%) for %s%s, in %s", d.Figure, d.Estimate, d.CILow, d.CIHigh, what, expected, d.Setup)
	case c.Seen:
		return fmt.Sprintf("seen, at another size than expected: %s moved %+.2f%% (interval %+.2f%% .. %+.2f%%) for %s%s, in %s", d.Figure, d.Estimate, d.CILow, d.CIHigh, what, expected, d.Setup)
	}
	return fmt.Sprintf("this set-up cannot see it: %s, measuring %s, did not show %s (%s)%s", d.Setup, d.Figure, what, d.Decision, expected)
}

// controlKey names the set-up a control vouches for: the lab file, the
// traffic run as offered, the figure, duet or not, and the machine.
func (req Request) controlKey(figure string) string {
	t := req.Traffic
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%v|%d|%d|%s|%v|%s", req.Lab.SHA256, t.Name, t.Frames, t.RatePPS, t.RateMbps, figure, req.Duet, machine())
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// machine names this machine for a saved control: its name, kernel and
// CPU count.
func machine() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Sprintf("unknown, %d CPUs", runtime.NumCPU())
	}
	return fmt.Sprintf("%s, Linux %s, %d CPUs", unix.ByteSliceToString(u.Nodename[:]), unix.ByteSliceToString(u.Release[:]), runtime.NumCPU())
}

// controlDir is where controls are saved: the user's cache directory.
func controlDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the positive controls: %w", err)
	}
	return filepath.Join(dir, "nslab", "controls"), nil
}

// saveControl writes c where findControl finds it again.
func saveControl(c *report.Control) error {
	dir, err := controlDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save the positive control: %w", err)
	}
	c.Saved = filepath.Join(dir, c.Key+".json")
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.Saved, b, 0o644); err != nil {
		return fmt.Errorf("save the positive control: %w", err)
	}
	return nil
}

// ReadControl reads a positive control that bench saved.
func ReadControl(path string) (*report.Control, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the positive control: %w", err)
	}
	var c report.Control
	if err := json.Unmarshal(b, &c); err != nil || c.Key == "" {
		return nil, fmt.Errorf("%s is not a positive control a sensitivity check (check-sensitivity) saved (%v)", path, err)
	}
	c.Saved = path
	return &c, nil
}

// findControl is the saved control of key, when there is one younger
// than controlMaxAge (nil otherwise: none is no error).
func findControl(key string) *report.Control {
	dir, err := controlDir()
	if err != nil {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, key+".json"))
	if err != nil {
		return nil
	}
	var c report.Control
	if json.Unmarshal(b, &c) != nil || c.Key != key || time.Since(c.When) > controlMaxAge {
		return nil
	}
	c.Saved = filepath.Join(dir, key+".json")
	return &c
}
