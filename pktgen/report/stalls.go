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
	if s.Stalls == 0 {
		ew.printf("stalls: none on cpu %s while the engine ran", strings.Join(cpus, ","))
	} else {
		ew.printf("stalls: %d on cpu %s while the engine ran, longest %v, %v in all", s.Stalls, strings.Join(cpus, ","),
			s.LongestNs.Round(10*time.Microsecond), s.TotalNs.Round(10*time.Microsecond))
		if r.Loss > 0 || r.NamedDrops > 0 {
			ew.printf("; the losses may be the machine's too")
		}
	}
	ew.detailf(" (a stall: the CPU was taken away, a hard timer's interrupt came %v late or more)", s.ThresholdNs)
	ew.printf("\n")
}
