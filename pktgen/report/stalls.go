package report

import (
	"fmt"
	"strings"
	"time"
)

// stallLine is the table's line on the run's stalls.
func (r *Report) stallLine(ew *errWriter) {
	s := r.Stalls
	if s == nil {
		if r.StallNote != "" {
			ew.printf("%s\n", r.StallNote)
		}
		return
	}
	cpus := make([]string, len(s.CPUs))
	for i, c := range s.CPUs {
		cpus[i] = fmt.Sprint(c)
	}
	ew.printf("stalls of cpu %s while the engine ran (the CPU was taken away: a hard timer's interrupt came %v late or more): %d", strings.Join(cpus, ","), s.ThresholdNs, s.Stalls)
	if s.Stalls > 0 {
		ew.printf(", longest %v, %v in all", s.LongestNs.Round(10*time.Microsecond), s.TotalNs.Round(10*time.Microsecond))
		if r.Loss > 0 || r.NamedDrops > 0 {
			ew.printf("; the losses may be the machine's as much as the path's")
		}
	}
	ew.printf("\n")
}
