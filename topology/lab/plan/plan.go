// Package plan is a lab's plan as data: the ordered steps that build it,
// each with its shell lines and what apply compares it by (its key, the
// objects it makes and needs), and the comparison of two plans, which
// says what an apply takes back, makes, rebuilds and reloads. It runs
// nothing: a step's actions are functions of D, what runs them (topology/lab's
// deployer), which this package never calls.
package plan

import "strings"

// Step is one named change of a lab. The plan is the ordered list of
// steps; it can be printed (nslab deploy --dry-run) before anything runs.
type Step[D any] struct {
	Name  string
	Shell func() []string // the same change as iproute2/sysctl commands
	Do    func(D) error
	// What apply compares and takes back: Key names the change (default:
	// Name and the shell lines); Makes are the objects it creates and
	// Needs those it works on: "N" node N's namespace, "N:IF" an
	// interface, "N:*" every interface of N, "N/view" its view,
	// "N/cgroup" its cgroup, "N/procs" its processes. Undo takes the
	// change back on a running lab, treating what is gone already as taken
	// back; with Undo nil, only rebuilding the nodes of Needs does
	// (unless NoUndo: nothing to take back).
	Key          string
	Makes, Needs []string
	Undo         func(D) error
	NoUndo       bool
	// Reload, where a program can take a new configuration without a
	// restart (a routing daemon): the step that does so. Compare pairs
	// the deployed lab's step and the file's that make the same object
	// and reloads instead.
	Reload *Step[D]
	// Follows makes the step again in an apply that makes any object
	// whose name contains it (the wait for links to be up follows ":",
	// the check that services keep running "/service").
	Follows string
	// Ahead starts the step's work in the background once every
	// namespace of the run exists; its Do then waits for it.
	Ahead func(D)
}

// KeyOf is what Compare compares a step by.
func (s Step[D]) KeyOf() string {
	if s.Key != "" {
		return s.Key
	}
	return s.Name + "\n" + strings.Join(s.Shell(), "\n")
}

// IsNamespace reports whether s creates a node's namespace.
func (s Step[D]) IsNamespace() bool {
	return len(s.Makes) == 1 && !strings.ContainsAny(s.Makes[0], ":/")
}

// NodeOf is the node an object of Step.Makes or Needs is of.
func NodeOf(obj string) string {
	if i := strings.IndexAny(obj, ":/"); i >= 0 {
		return obj[:i]
	}
	return obj
}

// SkipUndo reports whether step s need not be taken back because the
// namespace of a node it works in goes anyway (going: removed, or
// rebuilt) and s is not that namespace's own step.
func SkipUndo[D any](s Step[D], going map[string]bool) bool {
	if s.NoUndo || s.Undo == nil {
		return true
	}
	if s.IsNamespace() {
		return false // its removal is the point
	}
	for _, need := range s.Needs {
		if going[NodeOf(need)] {
			return true
		}
	}
	return false
}
