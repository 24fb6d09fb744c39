package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
)

// TwinName is the twin lab's name: the lab's, cut to leave room, and
// "-d" (lab names are at most 12 characters).
func TwinName(name string) string {
	if len(name) > 10 {
		name = name[:10]
	}
	return name + "-d"
}

// PlacedCPUs are the CPUs l's forwarding nodes are placed on.
func PlacedCPUs(l *spec.Lab) []int {
	var cpus []int
	for _, n := range l.Nodes {
		if (n.Forwarding.IPv4 || n.Forwarding.IPv6) && n.Placed() {
			for _, c := range n.CPUs {
				if !slices.Contains(cpus, c) {
					cpus = append(cpus, c)
				}
			}
		}
	}
	slices.Sort(cpus)
	return cpus
}

// ThreadedReceive lists the nodes of l whose receive work runs in napi
// kthreads: placed with receive: napi, an XDP fast path on a placed node
// (nslab threads its NAPI), or an interface with napi: {threaded: true}.
func ThreadedReceive(l *spec.Lab) string {
	var out []string
	for _, n := range l.Nodes {
		threaded := n.Placed() && (n.Receive == spec.ReceiveNAPI || n.Forwarding.FastPath == spec.FastPathXDP)
		for _, i := range n.Interfaces {
			threaded = threaded || i.NAPI != nil && i.NAPI.Threaded != nil && *i.NAPI.Threaded
		}
		if threaded {
			out = append(out, n.Name)
		}
	}
	return strings.Join(out, ", ")
}

func OrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// TwinOf is lab l's twin: the same file under the twin's name, with the
// same placement.
func TwinOf(l *spec.Lab) (*spec.Lab, error) {
	twin, err := spec.Parse(l.File, labname.Rename(l.Source, TwinName(l.Name)))
	if err != nil {
		return nil, fmt.Errorf("the duet's twin lab: %w", err)
	}
	if l.Unplaced != "" {
		twin.Unplace(l.Unplaced)
	}
	return twin, nil
}

func JoinOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return fmt.Sprint(s)
}

// RoutersPlaced reports whether every measured run's routers were
// placed on CPUs of their own (and there was one with a cost).
func RoutersPlaced(reports []*report.Report) bool {
	seen := false
	for _, r := range reports {
		if r.Cost == nil {
			continue
		}
		if !r.Cost.Placed {
			return false
		}
		seen = true
	}
	return seen
}
