package report

import "strings"

// LinkFidelity is what one impaired interface was asked to do and what it
// delivered in a run, check by check; Flag says the first check it
// failed ("" when it did what it was told).
type LinkFidelity struct {
	Interface string          `json:"interface"`
	Asked     string          `json:"asked"`
	Checks    []FidelityCheck `json:"checks"`
	Flag      string          `json:"flag,omitempty"`
}

// FidelityCheck is one property of an impairment: asked, delivered (with
// how it was measured), and whether that is what was asked.
type FidelityCheck struct {
	What      string `json:"what"`
	Asked     string `json:"asked"`
	Delivered string `json:"delivered"`
	OK        bool   `json:"ok"`
	// Untested: the run could not test it (a shaper offered less than
	// its rate); OK is then false.
	Untested bool `json:"untested,omitempty"`
}

// fidelityLines writes the fidelity of each impaired interface.
func (r *Report) fidelityLines(ew *errWriter) {
	for _, f := range r.Fidelity {
		var parts []string
		for _, c := range f.Checks {
			verdict := "as asked"
			switch {
			case c.Untested:
				verdict = "untested"
			case !c.OK:
				verdict = "NOT as asked"
			}
			parts = append(parts, c.What+" asked "+c.Asked+", delivered "+c.Delivered+": "+verdict)
		}
		ew.printf("impairment of %s", f.Interface)
		ew.detailf(" (%s)", f.Asked)
		if len(parts) == 1 {
			ew.printf(": %s\n", parts[0])
		} else {
			ew.printf(":\n  %s\n", strings.Join(parts, "\n  "))
		}
		if f.Flag != "" {
			ew.printf("  ! %s: %s\n", f.Interface, f.Flag)
		}
	}
	if len(r.Fidelity) > 0 {
		ew.printf("\n")
	}
}
