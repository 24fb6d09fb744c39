package deployed

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// runningDaemons maps each of lab labName's routing daemon marks
// (LAB/NODE/frr, LAB/NODE/bird) to the command names of the processes
// that carry it: one pass over /proc, in the caller's PID namespace.
func runningDaemons(labName string) map[string][]string {
	var marks []string
	pids := Marked(func(mark string) bool {
		if strings.HasPrefix(mark, labName+"/") && (strings.HasSuffix(mark, "/frr") || strings.HasSuffix(mark, "/bird")) {
			marks = append(marks, mark)
			return true
		}
		return false
	})
	out := map[string][]string{}
	for i, pid := range pids {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			out[marks[i]] = append(out[marks[i]], strings.TrimSpace(string(comm)))
		}
	}
	return out
}

// daemonDifferences are node n's routing daemons that the file runs and
// that are not running (running: see runningDaemons): the routes they
// would learn and announce are missing, so the kernels lack what the file
// declares. A node stopped by nslab node stop runs none, as it should.
func daemonDifferences(labName string, n *spec.Node, running map[string][]string) []Difference {
	if n.Stopped {
		return nil
	}
	var suite, name string
	var want []string
	switch {
	case n.FRR != nil:
		suite, name, want = "frr", "FRR", FRRDaemons(n.FRR)
	case n.BIRD != nil:
		suite, name, want = "bird", "BIRD", []string{"bird"}
	default:
		return nil
	}
	have := running[labName+"/"+n.Name+"/"+suite]
	var gone []string
	for _, d := range want {
		if !slices.Contains(have, d) {
			gone = append(gone, d)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return []Difference{{Node: n.Name, Missing: true, What: fmt.Sprintf("the file runs %s's %s, which %s not running: the routes it learns and announces are missing (nslab node stop %s, then start, starts the node's daemons again)",
		name, strings.Join(gone, ", "), map[bool]string{true: "is", false: "are"}[len(gone) == 1], n.Name)}}
}
