package qdisc

import (
	"fmt"
	"strings"

	"github.com/nslab/nslab/internal/units"

	"github.com/nslab/nslab/topology/spec"
)

// Shell is the tc command that sets m on interface ifname of namespace
// nsName, as Set does on an interface without a qdisc of its own (a
// deploy; on one with a qdisc, Set runs ShellClear first).
func Shell(nsName, ifname string, m *spec.Impair, mtu int) string {
	head := fmt.Sprintf("tc -n %s qdisc replace dev %s root handle 1: ", nsName, ifname)
	if !m.NeedsNetem() {
		rate := m.Rate / 8
		return head + fmt.Sprintf("tbf rate %s burst %d limit %d", units.FormatBitRate(m.Rate), tbfBurst(rate, mtu), m.QueueLimit()*(mtu+frameOverhead))
	}
	w := []string{"netem"}
	if m.Delay > 0 {
		w = append(w, "delay", spec.FormatDelay(m.Delay))
		if m.Jitter > 0 {
			w = append(w, spec.FormatDelay(m.Jitter))
		}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"loss", m.Loss}, {"duplicate", m.Duplicate}, {"reorder", m.Reorder}, {"corrupt", m.Corrupt}} {
		switch {
		case p.name == "loss" && m.LossBurst > 0:
			w = append(w, geShell(m)...)
		case p.v > 0:
			w = append(w, p.name, units.FormatPercent(p.v))
		}
	}
	if m.Rate > 0 {
		w = append(w, "rate", units.FormatBitRate(m.Rate))
	}
	w = append(w, "limit", fmt.Sprint(m.QueueLimit()))
	return head + strings.Join(w, " ")
}

// ShellClear is the tc command that Clear runs.
func ShellClear(nsName, ifname string) string {
	return fmt.Sprintf("tc -n %s qdisc del dev %s root", nsName, ifname)
}
