package deployed

import (
	"fmt"
	"math"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// impairDifferences lists where node n's queueing disciplines, read
// through h (a handle in n's namespace), differ from the file: an
// impairment or queue the file declares that the kernel lacks or has
// otherwise (Missing), and a netem or tbf impairment the kernel has where
// the file declares none (information: nslab impair sets them on a
// running lab). It runs in the caller's namespace (through h).
func impairDifferences(h *netlink.Handle, n *spec.Node) ([]Difference, error) {
	var out []Difference
	for _, i := range n.Interfaces {
		if i.Kind == spec.KindLoopback {
			continue
		}
		link, err := nlsafe.LinkByName(h, i.Name)
		if err != nil {
			return nil, err
		}
		st, err := qdisc.Read(h, link)
		if err != nil {
			return nil, err
		}
		if what, missing := impairDifference(i, st); what != "" {
			out = append(out, Difference{Node: n.Name, What: what, Missing: missing})
		}
	}
	return out, nil
}

// impairDifference says how interface i's root qdisc st (nil: none of
// its own) differs from the file, and whether the kernel lacks what the
// file declares; "" when they agree.
func impairDifference(i *spec.Interface, st *qdisc.State) (string, bool) {
	has := "none"
	if st != nil {
		has = st.String()
	}
	if m := i.Impair; m != nil {
		if st == nil || st.Kind != m.Qdisc() || st.Impair == nil || !sameImpair(m, st.Impair) {
			return fmt.Sprintf("%s: the file's impairment %s %s is not in the kernel (it has %s)", i.Name, m.Qdisc(), m, has), true
		}
	}
	if q := i.Queue; q != nil {
		kind := ""
		if st != nil {
			kind = st.Kind
			if i.Impair != nil {
				kind = st.Child
			}
		}
		if kind != q.Kind {
			return fmt.Sprintf("%s: the file's queue %s is not in the kernel (it has %s)", i.Name, q.Kind, has), true
		}
	}
	if i.Impair == nil && i.Queue == nil && st != nil && st.Impair != nil {
		return fmt.Sprintf("%s has the impairment %s in the kernel, not in the file", i.Name, st), false
	}
	return "", false
}

// sameImpair reports whether the kernel's impairment k (as qdisc.Read
// gives it back, rounded to the kernel's units) is the file's m.
func sameImpair(m, k *spec.Impair) bool {
	near := func(a, b float64, tol float64) bool { return math.Abs(a-b) <= tol }
	us := func(a, b time.Duration) bool { return near(float64(a), float64(b), float64(2*time.Microsecond)) }
	if !us(m.Delay, k.Delay) || !us(m.Jitter, k.Jitter) || !near(float64(m.Rate), float64(k.Rate), float64(m.Rate)/100+8) {
		return false
	}
	if m.LossBurst == 0 && !near(m.Loss, k.Loss, 1e-4) {
		return false // a burst loss is a Gilbert-Elliott model, whose mean netem does not give back as Loss
	}
	return near(m.Duplicate, k.Duplicate, 1e-4) && near(m.Reorder, k.Reorder, 1e-4) && near(m.Corrupt, k.Corrupt, 1e-4)
}
