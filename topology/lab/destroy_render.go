package lab

import (
	"fmt"
	"io"
)

// WriteText says what destroy did, as nslab destroy prints it.
func (r *DestroyReport) WriteText(w io.Writer) {
	if !r.Found {
		fmt.Fprintf(w, "lab %s: nothing to destroy\n", r.Lab)
		return
	}
	if r.Damaged != "" {
		fmt.Fprintf(w, "lab %s: its state file was damaged (%s); removing what carries the lab's marker\n", r.Lab, r.Damaged)
	}
	fmt.Fprintf(w, "destroyed lab %s: %d namespaces removed", r.Lab, len(r.Removed))
	if len(r.Gone) > 0 {
		fmt.Fprintf(w, ", %d already gone", len(r.Gone))
	}
	if r.Stopped > 0 {
		fmt.Fprintf(w, ", %d process(es) stopped", r.Stopped)
	}
	fmt.Fprintln(w)
	for _, k := range r.Killed {
		fmt.Fprintf(w, "  killed: %s: it was still running %s after SIGTERM\n", k, stopBound)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "  left alone: %s\n", s)
	}
	for _, s := range r.Unproven {
		fmt.Fprintf(w, "  not given back without the state file: %s\n", s)
	}
}
