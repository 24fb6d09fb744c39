package compare

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

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

// ControlName is the control variant's name: "control", unless the file
// has a variant of that name.
func ControlName(l *spec.Lab) string {
	name := "control"
	for l.Variant(name) != nil && name != spec.BaseVariant {
		name += "-nslab"
	}
	return name
}

// AddControl adds to lab l a variant named name: variant base with rules
// firewall rules that match nothing (drop from a benchmarking prefix no
// address of the lab is in) on every node that forwards. It returns those
// nodes. The variant's lab is a copy of l's file parsed anew, so the
// lab's own variants stay as they are.
func AddControl(l *spec.Lab, base, name string, rules int) ([]string, error) {
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
	if err := NoneIn(l); err != nil {
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

// NoneIn refuses a lab with an address in the control's ranges (its
// rules would then match something).
func NoneIn(l *spec.Lab) error {
	for a, by := range l.AddressOwners() {
		for _, r := range controlRanges {
			if r.Contains(a) {
				return fmt.Errorf("the positive control's rules drop from %s and %s, and %s:%s has %s in %s: they would match the lab's own packets", controlRanges[0], controlRanges[1], by.Node, by.Interface, a, r)
			}
		}
	}
	return nil
}

// ExpectedChange is the change in % that add ns more per packet make to
// figure, for routers that cost a ns a packet: a cost figure rises by
// add/a; the rate of routers that are the limit falls to a/(a+add).
func ExpectedChange(figure string, a, add float64) float64 {
	if slices.Contains(rateFigures, figure) {
		return 100 * (a/(a+add) - 1)
	}
	if slices.Contains(costFigures, figure) {
		return 100 * add / a
	}
	return 0
}

// ControlSentence says what the control found, in a line.
func ControlSentence(c *report.Control, d *report.Decision) string {
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

// Machine names this Machine for a saved control: its name, kernel and
// CPU count.
func Machine() string {
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

// SaveControl writes c where FindControl finds it again.
func SaveControl(c *report.Control) error {
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

// FindControl is the saved control of key, when there is one younger
// than controlMaxAge (nil otherwise: none is no error).
func FindControl(key string) *report.Control {
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
