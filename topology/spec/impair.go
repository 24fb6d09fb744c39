package spec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/units"

	"gopkg.in/yaml.v3"
)

// Impair is what a link does to the packets an interface sends: delay
// (with jitter), loss, duplication, reordering and corruption (netem), and
// a rate limit with its queue. It acts on the interface's egress, as tc
// qdiscs do; an impairment both ways is one on each end of the link.
type Impair struct {
	Delay, Jitter time.Duration
	// Percentages, 0..100.
	Loss, Duplicate, Reorder, Corrupt float64
	Rate                              uint64 // bits per second; 0: unlimited
	Limit                             int    // packets queued at most; 0: DefaultImpairLimit
	// LossBurst is the mean length of a run of lost packets: Loss is then
	// the mean of netem's Gilbert-Elliott model (GELoss); 0: each packet
	// lost on its own, with probability Loss.
	LossBurst float64
}

// GELoss is the simple Gilbert model that gives a mean loss of mean
// percent in runs of burst packets on average, as netem's gemodel takes
// it (percentages): from the good state, where nothing is lost, to the
// bad state, where everything is, with probability p; back with
// probability r. A run of losses is a stay in the bad state, 1/r long on
// average; the share of packets lost is the share of time in the bad
// state, p/(p+r). So r = 1/burst and p = r·mean/(100−mean).
func GELoss(mean, burst float64) (p, r float64) {
	r = 100 / burst
	return r * mean / (100 - mean), r
}

// DefaultImpairLimit is the queue an impairment has when the file sets no
// limit: netem's own default, in packets.
const DefaultImpairLimit = 1000

// NeedsNetem reports whether the impairment needs the netem qdisc: any
// delay, loss, duplication, reordering or corruption. A rate alone is
// realised with tbf, which kernels without netem often still have.
func (m *Impair) NeedsNetem() bool {
	return m.Delay > 0 || m.Jitter > 0 || m.Loss > 0 || m.Duplicate > 0 || m.Reorder > 0 || m.Corrupt > 0
}

// Qdisc is the kind of queueing discipline that realises the impairment.
func (m *Impair) Qdisc() string {
	if m.NeedsNetem() {
		return "netem"
	}
	return "tbf"
}

// QueueLimit is the queue in packets.
func (m *Impair) QueueLimit() int {
	if m.Limit > 0 {
		return m.Limit
	}
	return DefaultImpairLimit
}

// String says the impairment in tc's words ("delay 20ms 5ms loss 1% rate
// 10Mbit").
func (m *Impair) String() string {
	var w []string
	if m.Delay > 0 || m.Jitter > 0 {
		w = append(w, "delay "+FormatDelay(m.Delay))
		if m.Jitter > 0 {
			w = append(w, FormatDelay(m.Jitter))
		}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"loss", m.Loss}, {"duplicate", m.Duplicate}, {"reorder", m.Reorder}, {"corrupt", m.Corrupt}} {
		if p.v > 0 {
			w = append(w, p.name+" "+units.FormatPercent(p.v))
		}
		if p.name == "loss" && m.LossBurst > 0 {
			w = append(w, "burst "+strconv.FormatFloat(m.LossBurst, 'f', -1, 64))
		}
	}
	if m.Rate > 0 {
		w = append(w, "rate "+units.FormatBitRate(m.Rate))
	}
	if m.Limit > 0 {
		w = append(w, fmt.Sprintf("limit %d", m.Limit))
	}
	return strings.Join(w, " ")
}

// FormatDelay writes a delay as tc reads it: whole milliseconds as ms,
// else microseconds ("20ms", "1500us").
func FormatDelay(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dus", d/time.Microsecond)
}

// ParseDelay reads a delay such as "20ms" or "500us" (0 to 1 hour).
func ParseDelay(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 || d > time.Hour {
		return 0, fmt.Errorf("%q: write a duration such as 20ms, 1.5ms or 500us", s)
	}
	return d, nil
}

var impairKeys = keysOf(impairDef)

// parseImpair reads an interface's impair: mapping.
func (r *reporter) parseImpair(v *yaml.Node, path string) *Impair {
	m := &Impair{}
	before := len(r.probs)
	f := r.fields(v, path, "an impairment such as {delay: 20ms, loss: 1%, rate: 10Mbit}", impairKeys...)
	for _, key := range []struct {
		name string
		d    *time.Duration
	}{{"delay", &m.Delay}, {"jitter", &m.Jitter}} {
		if e, ok := f[key.name]; ok {
			if s, ok := r.str(e.v, e.path, "a duration such as 20ms"); ok {
				d, err := ParseDelay(s)
				if err != nil {
					r.errf(e.path, "%v", err)
				}
				*key.d = d
			}
		}
	}
	bursty := false
	if e, ok := f["loss"]; ok && e.v.Kind == yaml.MappingNode {
		m.Loss, m.LossBurst = r.burstyLoss(e.v, e.path)
		bursty = true
	}
	for _, key := range []struct {
		name string
		p    *float64
	}{{"loss", &m.Loss}, {"duplicate", &m.Duplicate}, {"reorder", &m.Reorder}, {"corrupt", &m.Corrupt}} {
		if e, ok := f[key.name]; ok && (!bursty || key.name != "loss") {
			if s, ok := r.str(e.v, e.path, "a percentage such as 1%"); ok {
				p, err := units.ParsePercent(s)
				if err != nil {
					r.errf(e.path, "%v", err)
				}
				*key.p = p
			}
		}
	}
	if e, ok := f["rate"]; ok {
		if s, ok := r.str(e.v, e.path, "a rate such as 10Mbit"); ok {
			rate, err := units.ParseBitRate(s)
			if err != nil {
				r.errf(e.path, "%v", err)
			}
			m.Rate = rate
		}
	}
	if e, ok := f["limit"]; ok {
		m.Limit, _ = r.integer(e.v, e.path, "the packets its queue holds", 1, 1<<20)
	}
	if len(r.probs) > before {
		return m // a key is wrong: its combination with the others means little
	}
	_, limitOnly := f["limit"]
	r.checkImpair(m, path, len(f) == 0 || limitOnly && len(f) == 1)
	return m
}

// burstyLoss reads loss: {mean: 5%, burst: 4}: losses in runs of burst
// packets on average, mean percent of all packets.
func (r *reporter) burstyLoss(v *yaml.Node, path string) (mean, burst float64) {
	f := r.fields(v, path, "bursty loss such as {mean: 5%, burst: 4}", keysOf(burstyLossDef)...)
	if e, ok := f["mean"]; ok {
		if s, ok := r.str(e.v, e.path, "a percentage such as 5%"); ok {
			var err error
			if mean, err = units.ParsePercent(s); err != nil {
				r.errf(e.path, "%v", err)
			} else if mean <= 0 || mean >= 100 {
				r.errf(e.path, "mean %s: give more than 0%% and less than 100%%", s)
			}
		}
	} else {
		r.errf(path, "missing mean: (the share of packets lost, such as 5%%)")
	}
	if e, ok := f["burst"]; ok {
		if s, ok := r.str(e.v, e.path, "packets, such as 4"); ok {
			b, err := strconv.ParseFloat(s, 64)
			if err != nil || b < 1 || b > 1e6 {
				r.errf(e.path, "burst %q: the mean number of packets lost in a row, 1 or more (such as 4)", s)
			}
			burst = b
		}
	} else {
		r.errf(path, "missing burst: (the mean number of packets lost in a row, such as 4; for losses one by one write loss: 5%%)")
	}
	return mean, burst
}

// checkImpair reports the impairment's problem, if any, at its key.
func (r *reporter) checkImpair(m *Impair, path string, empty bool) {
	if empty {
		r.errf(path, "the impairment does nothing: give delay, loss, duplicate, reorder, corrupt or rate, or remove it")
		return
	}
	if key, msg := m.Problem(); msg != "" {
		r.errf(path+"."+key, "%s", msg)
	}
}

// Problem names the first combination tc would refuse, with the key it is
// about and the fix; msg is "" when there is none.
func (m *Impair) Problem() (key, msg string) {
	switch {
	case m.Jitter > 0 && m.Delay == 0:
		return "jitter", "jitter varies a delay: set delay too (delay: 20ms, jitter: 5ms)"
	case m.Jitter > m.Delay:
		return "jitter", fmt.Sprintf("jitter %s is larger than delay %s: some packets' delay would fall below zero; make it at most the delay", FormatDelay(m.Jitter), FormatDelay(m.Delay))
	case m.Reorder > 0 && m.Delay == 0:
		return "reorder", "reorder sends some packets at once and delays the rest: set a delay too (delay: 10ms)"
	case m.LossBurst > 0 && (m.Loss <= 0 || m.Loss >= 100):
		return "burst", "a burst is of losses: give a loss between 0% and 100% too (loss: {mean: 5%, burst: 4})"
	}
	return "", ""
}

// ImpairKeys are the settings Set takes, as nslab impair's flags and
// bench --event's impair words name them.
var ImpairKeys = []string{"delay", "jitter", "loss", "burst", "duplicate", "reorder", "corrupt", "rate", "limit"}

// Set reads one setting of an impairment, written as the command line
// writes it (20ms, 1%, 10Mbit, 1000).
func (m *Impair) Set(key, value string) error {
	var err error
	switch key {
	case "delay":
		m.Delay, err = ParseDelay(value)
	case "jitter":
		m.Jitter, err = ParseDelay(value)
	case "loss":
		m.Loss, err = units.ParsePercent(value)
	case "burst":
		m.LossBurst, err = strconv.ParseFloat(value, 64)
		if err == nil && (m.LossBurst < 1 || m.LossBurst > 1e6) {
			err = fmt.Errorf("%q: the mean number of packets lost in a row, 1 or more", value)
		}
	case "duplicate":
		m.Duplicate, err = units.ParsePercent(value)
	case "reorder":
		m.Reorder, err = units.ParsePercent(value)
	case "corrupt":
		m.Corrupt, err = units.ParsePercent(value)
	case "rate":
		m.Rate, err = units.ParseBitRate(value)
	case "limit":
		_, err = fmt.Sscan(value, &m.Limit)
	default:
		return fmt.Errorf("%q: one of %s", key, strings.Join(ImpairKeys, ", "))
	}
	return err
}
