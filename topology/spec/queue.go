package spec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/units"
	"gopkg.in/yaml.v3"
)

// Queue is the queue discipline of what an interface sends (qdisc: under
// an interface): the interface's root qdisc, or, under an impairment (a
// netem or tbf root, impair:), that root's child, which then holds the
// packets the impairment lets wait (the queue in front of a slow link).
//
//	qdisc: fq_codel
//	qdisc: {kind: fq_codel, target: 5ms, interval: 100ms, limit: 1000}
//	qdisc: {kind: pfifo, limit: 1000}
//	qdisc: {kind: htb, rate: 5Mbit, ceil: 10Mbit}
//	qdisc: {kind: cake, bandwidth: 5Mbit}
type Queue struct {
	Kind      string        // one of QueueKinds
	Limit     int           // packets (pfifo, fq_codel, fq); 0: the kernel's default
	Target    time.Duration // fq_codel; 0: the kernel's (5ms)
	Interval  time.Duration // fq_codel; 0: the kernel's (100ms)
	Bandwidth uint64        // cake, bit/s; 0: unlimited
	Rate      uint64        // htb, bit/s
	Ceil      uint64        // htb, bit/s; 0: the rate
}

// QueueKinds are the queue disciplines a file can ask for.
var QueueKinds = []string{"pfifo", "fq_codel", "fq", "cake", "htb"}

// queueParams are the keys each kind takes besides kind.
var queueParams = map[string][]string{
	"pfifo": {"limit"}, "fq_codel": {"limit", "target", "interval"}, "fq": {"limit"}, "cake": {"bandwidth"}, "htb": {"rate", "ceil"},
}

var queueKeys = keysOf(queueDef)

// String says the queue in tc's words: "fq_codel limit 1000 target 5ms".
func (q *Queue) String() string {
	w := []string{q.Kind}
	if q.Limit > 0 {
		w = append(w, "limit", fmt.Sprint(q.Limit))
	}
	if q.Target > 0 {
		w = append(w, "target", FormatDelay(q.Target))
	}
	if q.Interval > 0 {
		w = append(w, "interval", FormatDelay(q.Interval))
	}
	if q.Bandwidth > 0 {
		w = append(w, "bandwidth", units.FormatBitRate(q.Bandwidth))
	}
	if q.Rate > 0 {
		w = append(w, "rate", units.FormatBitRate(q.Rate))
	}
	if q.Ceil > 0 {
		w = append(w, "ceil", units.FormatBitRate(q.Ceil))
	}
	return strings.Join(w, " ")
}

// parseQueue reads qdisc: (a kind, or a mapping with kind: and its
// settings), refusing a setting its kind does not take.
func (r *reporter) parseQueue(v *yaml.Node, path string) *Queue {
	q := &Queue{}
	if v.Kind == yaml.ScalarNode {
		q.Kind = v.Value
		r.checkQueueKind(q.Kind, path)
		return q
	}
	f := r.fields(v, path, "a queue discipline such as {kind: fq_codel, target: 5ms}", queueKeys...)
	e, ok := f["kind"]
	if !ok {
		r.errf(path, "missing kind: (%s)", strings.Join(QueueKinds, ", "))
		return q
	}
	q.Kind, _ = r.str(e.v, e.path, strings.Join(QueueKinds, ", "))
	if !r.checkQueueKind(q.Kind, e.path) {
		return q
	}
	for k, x := range f {
		if k != "kind" && !slices.Contains(queueParams[q.Kind], k) {
			r.errf(x.path, "%s takes no %s: (it takes %s)", q.Kind, k, strings.Join(queueParams[q.Kind], ", "))
		}
	}
	r.queueSettings(f, q)
	if q.Kind == "htb" && q.Rate == 0 {
		r.errf(path, "htb needs rate: (the class's guaranteed rate, such as 5Mbit)")
	}
	if q.Ceil > 0 && q.Ceil < q.Rate {
		r.errf(path+".ceil", "ceil %s is below rate %s: make it at least the rate", units.FormatBitRate(q.Ceil), units.FormatBitRate(q.Rate))
	}
	return q
}

// queueSettings reads the settings of a queue mapping.
func (r *reporter) queueSettings(f map[string]kv, q *Queue) {
	if e, ok := f["limit"]; ok {
		q.Limit, _ = r.integer(e.v, e.path, "the packets it holds", 1, 1<<20)
	}
	for _, k := range []struct {
		name string
		d    *time.Duration
	}{{"target", &q.Target}, {"interval", &q.Interval}} {
		if e, ok := f[k.name]; ok {
			if s, ok := r.str(e.v, e.path, "a duration such as 5ms"); ok {
				d, err := ParseDelay(s)
				if err != nil || d <= 0 {
					r.errf(e.path, "%s %q: a duration such as 5ms", k.name, s)
				}
				*k.d = d
			}
		}
	}
	for _, k := range []struct {
		name string
		p    *uint64
	}{{"bandwidth", &q.Bandwidth}, {"rate", &q.Rate}, {"ceil", &q.Ceil}} {
		if e, ok := f[k.name]; ok {
			if s, ok := r.str(e.v, e.path, "a rate such as 5Mbit"); ok {
				rate, err := units.ParseBitRate(s)
				if err != nil {
					r.errf(e.path, "%v", err)
				}
				*k.p = rate
			}
		}
	}
}

func (r *reporter) checkQueueKind(kind, path string) bool {
	if !slices.Contains(QueueKinds, kind) {
		r.errf(path, "qdisc %q: use %s", kind, strings.Join(QueueKinds, ", "))
		return false
	}
	return true
}
