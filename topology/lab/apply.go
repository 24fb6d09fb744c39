package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/lab/plan"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Apply: a deployed lab follows its edited file. The deployed lab's plan
// and the file's are compared step by step (Step.key): the deployed
// lab's steps the file no longer has are taken back (Step.undo, newest
// first), then the file's new steps run (in plan order). A step that
// works on an object another change takes away (an address on a veth
// made again, a service in a view made again) is taken back and made
// again with it (Step.needs, Step.makes). A change only rebuilding a node
// can take back (an exec line, CPU placement) rebuilds that node: its
// namespace and everything in it, and its links, go and come again.
//
// The state records the apply before anything changes (the file's
// contents, the nodes it may create): a destroy then finds everything,
// and an apply after one that was killed rebuilds every node the killed
// one touched. An apply that fails takes back what it did.

// ApplyPlan is what an apply does: Undo, the deployed lab's steps taken
// back, in this order, then Do, the file's steps made; Rebuilt are the
// nodes made again whole.
type ApplyPlan = plan.Changes[*deployer]

// ApplyResult says what an apply did.
type ApplyResult struct {
	Lab            string
	Undone, Done   int
	Rebuilt, Added []string
	Removed        []string
	Duration       time.Duration
}

// Keys of the steps that follow what they wait for: the wait for links
// to be up runs when a link is made, the check of services when a service
// starts.
const (
	waitKey          = "wait until every lab interface is operationally up"
	checkServicesKey = "check that the services keep running"
)

// PlanApply is the plan that takes deployed lab from to lab to, with the
// nodes of rebuild made again whole.
func PlanApply(from, to *spec.Lab, rebuild []string) (*ApplyPlan, error) {
	has := func(l *spec.Lab) func(string) bool { return func(n string) bool { return l.Node(n) != nil } }
	return plan.Compare(Plan(from), Plan(to), plan.Labs{From: has(from), To: has(to)}, rebuild)
}

// Apply makes deployed lab lab.Name what lab (its edited file) says,
// changing only what differs (see PlanApply); it returns what it did.
// When a step fails or ctx ends, what it did is taken back, and the lab
// is as before. It runs in the caller's namespace, each change through
// the node's namespace.
func (m *Manager) Apply(ctx context.Context, lab *spec.Lab) (*ApplyResult, error) {
	start := time.Now()
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := m.checkOwner(lab.Name); err != nil {
		return nil, err
	}
	st, err := m.Recorded(lab.Name)
	if err != nil {
		return nil, err
	}
	if st.Phase != state.PhaseDeployed {
		return nil, &ConflictError{Problems: []string{fmt.Sprintf("lab %s is %s, not deployed: destroy it and deploy the file", lab.Name, st.Phase)}, Destroy: lab.Name}
	}
	if len(st.Stopped) > 0 {
		return nil, fmt.Errorf("lab %s has stopped nodes (%s): start them first (nslab node start)", lab.Name, st.Stopped[0].Node)
	}
	if st.Variant != nil {
		return nil, fmt.Errorf("lab %s runs variant %s: apply works on the lab as deployed; bench takes the variant back when it ends", lab.Name, st.Variant.Name)
	}
	if st.Host != "" && lab.OnHost() == "" {
		if lab, err = lab.PartOf(st.Host); err != nil {
			return nil, err
		}
	}
	from, err := st.Spec()
	if err != nil {
		return nil, err
	}
	var rebuild []string
	if st.Applying != nil {
		if state.Alive(st.Applying.PID) && st.Applying.PID != os.Getpid() {
			return nil, fmt.Errorf("an apply of lab %s runs already (pid %d)", lab.Name, st.Applying.PID)
		}
		if rebuild, err = interrupted(st, from); err != nil {
			return nil, err
		}
	}
	changes, err := PlanApply(from, lab, rebuild)
	if err != nil {
		return nil, err
	}
	if problems := m.checkApply(from, lab, st); len(problems) > 0 {
		return nil, &ConflictError{Problems: problems}
	}
	return m.runApply(ctx, st, from, lab, changes, rebuild, start)
}

// interrupted is what an apply killed half way leaves to rebuild: every
// node its plan touched, and those it may have created that the lab as
// deployed has not.
func interrupted(st *state.State, from *spec.Lab) ([]string, error) {
	was, err := spec.Parse(st.Applying.File+" (as applied)", []byte(st.Applying.Source))
	if err != nil {
		return nil, fmt.Errorf("the killed apply's file: %w", err)
	}
	if st.Host != "" {
		if was, err = was.PartOf(st.Host); err != nil {
			return nil, err
		}
	}
	p, err := PlanApply(from, was, nil)
	if err != nil {
		return nil, err
	}
	touched := map[string]bool{}
	for _, s := range append(p.Undo, p.Do...) {
		for _, o := range append(slices.Clone(s.Needs), s.Makes...) {
			touched[plan.NodeOf(o)] = true
		}
	}
	for _, r := range st.Namespaces {
		if from.Node(r.Node) == nil {
			touched[r.Node] = true
		}
	}
	var out []string
	for n := range touched {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// checkApply says what stops lab from being applied over from, changing
// nothing: the new nodes' namespace names taken by something else, and
// what deploy's preflight checks of the file.
func (m *Manager) checkApply(from, lab *spec.Lab, st *state.State) []string {
	var problems []string
	for _, n := range lab.Nodes {
		if from.Node(n.Name) != nil || slices.ContainsFunc(st.Namespaces, func(r state.NSRecord) bool { return r.Node == n.Name }) {
			continue
		}
		name := lab.Namespace(n.Name)
		if exists, err := ns.Exists(m.netnsDir(), name); err != nil || exists {
			problems = append(problems, fmt.Sprintf("namespace %s (new node %s) already exists and is not the lab's: nslab will not touch it", name, n.Name))
		}
	}
	problems = append(problems, m.checkPlacement(lab)...)
	problems = append(problems, checkQdiscs(lab)...)
	problems = append(problems, checkKinds(lab)...)
	problems = append(problems, checkNetfilter(lab)...)
	problems = append(problems, checkLimits(lab)...)
	return problems
}

// applier is one apply under way: its deployer, and what it has taken
// back and made so far.
type applier struct {
	m        *Manager
	d        *deployer
	st       *state.State
	from, to *spec.Lab
	going    map[string]bool // nodes whose namespace goes (removed or rebuilt)
	undone   []Step
	skipped  map[int]bool // of undone: left to its namespace's removal
	done     []Step
}

// toRedo is what taking back a failed apply makes again: the steps it
// took back, and those it left to a namespace's removal that happened.
func (x *applier) toRedo() []Step {
	removed := map[string]bool{}
	for i, s := range x.undone {
		if s.IsNamespace() && !x.skipped[i] {
			removed[s.Makes[0]] = true
		}
	}
	var out []Step
	for i, s := range x.undone {
		again := slices.ContainsFunc(s.Needs, func(n string) bool { return removed[plan.NodeOf(n)] })
		if s.NoUndo && len(s.Needs) == 0 { // the wait for links, the check of services
			again = len(removed) > 0
		}
		if !x.skipped[i] || again {
			out = append(out, s)
		}
	}
	return out
}

// runApply records the apply, opens the running lab and runs plan; on a
// failure it takes back what it did.
func (m *Manager) runApply(ctx context.Context, st *state.State, from, to *spec.Lab, changes *ApplyPlan, rebuild []string, start time.Time) (*ApplyResult, error) {
	if err := m.recordApply(st, to, start); err != nil {
		return nil, err
	}
	x := &applier{m: m, st: st, from: from, to: to, going: map[string]bool{},
		d: &deployer{ctx: ctx, m: m, lab: from, st: st, inodes: map[string]uint64{}, handles: map[string]*netlink.Handle{}, index: map[spec.Endpoint]int{}}}
	defer x.d.close()
	for _, n := range rebuild {
		x.going[n] = true
	}
	for _, s := range changes.Undo {
		if s.IsNamespace() {
			x.going[s.Makes[0]] = true
		}
	}
	if err := x.run(ctx, changes, rebuild); err != nil {
		return nil, m.failApply(x.d, st, from, x.toRedo(), x.done, err)
	}
	m.finishApply(st, to, x.d)
	if err := m.saveState(st); err != nil {
		return nil, err
	}
	return x.result(changes, start), nil
}

// recordApply records in st, before anything changes, the apply of to
// and the nodes it may create.
func (m *Manager) recordApply(st *state.State, to *spec.Lab, start time.Time) error {
	abs, err := filepath.Abs(to.File)
	if err != nil {
		abs = to.File
	}
	st.Applying = &state.ApplyRecord{File: abs, SHA256: to.SHA256, Source: string(to.Source), PID: os.Getpid(), Started: start}
	for _, n := range to.Nodes {
		if !slices.ContainsFunc(st.Namespaces, func(r state.NSRecord) bool { return r.Node == n.Name }) {
			st.Namespaces = append(st.Namespaces, state.NSRecord{Node: n.Name, Name: to.Namespace(n.Name)})
		}
	}
	return m.saveState(st) // ahead: destroy finds the new nodes
}

// run opens the nodes that stay, removes those an earlier killed apply
// touched, takes back plan.Undo and makes plan.Do.
func (x *applier) run(ctx context.Context, changes *ApplyPlan, rebuild []string) error {
	for _, r := range x.st.Namespaces {
		if x.from.Node(r.Node) == nil || x.going[r.Node] {
			continue
		}
		if err := x.d.openHandle(r.Node); err != nil {
			return err
		}
	}
	for _, n := range rebuild { // whatever a killed apply left in them
		if err := x.d.removeNode(n); err != nil {
			return fmt.Errorf("rebuild %s: %w", n, err)
		}
	}
	x.skipped = map[int]bool{}
	for _, s := range changes.Undo {
		if plan.SkipUndo(s, x.going) {
			x.skipped[len(x.undone)] = true
		} else if err := ctxOr(ctx, func() error { return s.Undo(x.d) }); err != nil {
			return fmt.Errorf("take back %s: %w", s.Name, err)
		}
		x.undone = append(x.undone, s)
	}
	x.d.lab = x.to
	x.d.expect(changes.Do)
	for i, s := range changes.Do {
		if i == x.d.aheadAt {
			x.d.startAhead(changes.Do[i:])
		}
		err := ctx.Err()
		if err == nil && x.m.BeforeStep != nil {
			err = x.m.BeforeStep(ctx, i, s)
		}
		if err == nil {
			err = s.Do(x.d)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		x.done = append(x.done, s)
	}
	return x.m.writeHosts(x.to)
}

// result says what the apply did.
func (x *applier) result(changes *ApplyPlan, start time.Time) *ApplyResult {
	res := &ApplyResult{Lab: x.to.Name, Rebuilt: changes.Rebuilt, Done: len(x.done), Duration: time.Since(start)}
	res.Undone = len(x.undone) - len(x.skipped)
	for _, n := range x.to.Nodes {
		if x.from.Node(n.Name) == nil {
			res.Added = append(res.Added, n.Name)
		}
	}
	for _, n := range x.from.Nodes {
		if x.to.Node(n.Name) == nil {
			res.Removed = append(res.Removed, n.Name)
		}
	}
	return res
}

// ctxOr runs fn unless ctx has ended.
func ctxOr(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn()
}

// openHandle opens a netlink handle in node's namespace, for the steps.
func (d *deployer) openHandle(node string) error {
	return d.inNS(node, func(x *ns.NS) error {
		h, err := x.NetlinkHandle()
		d.handles[node] = h
		return err
	})
}

// writeHosts writes lab's hosts file again, in place (the views bind it,
// so it keeps its inode), when it differs.
func (m *Manager) writeHosts(l *spec.Lab) error {
	p := filepath.Join(m.stateDir(), l.Name, "hosts")
	want := hostsFile(l)
	if have, err := os.ReadFile(p); err != nil || string(have) == want {
		return nil // no views, or the same
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("the lab's hosts file: %w", err)
	}
	_, err = f.WriteString(want)
	return errors.Join(err, f.Close())
}

// finishApply makes st the state of lab to, as applied.
func (m *Manager) finishApply(st *state.State, to *spec.Lab, d *deployer) {
	st.File, st.SHA256, st.Source = st.Applying.File, st.Applying.SHA256, st.Applying.Source
	st.Applying = nil
	old := st.Namespaces
	st.Namespaces = nil
	for _, n := range to.Nodes {
		r := state.NSRecord{Node: n.Name, Name: to.Namespace(n.Name)}
		if ino, ok := d.inodes[n.Name]; ok {
			r.Inode = ino
		} else if i := slices.IndexFunc(old, func(o state.NSRecord) bool { return o.Node == n.Name }); i >= 0 {
			r.Inode = old[i].Inode
		}
		st.Namespaces = append(st.Namespaces, r)
	}
	st.Tunnels = tunnelRecords(to)
}

// failApply takes back a failed apply: the steps done, newest first, then
// the steps undone made again, oldest first, so that the lab is as it was
// (from). It returns cause, with what taking it back found.
func (m *Manager) failApply(d *deployer, st *state.State, from *spec.Lab, undone, done []Step, cause error) error {
	// No view is made behind the taking back, and what the apply made
	// ahead is not the lab's as it was: its steps make their own again.
	d.views.close()
	d.nsAhead, d.nsMade, d.nsReady = nil, nil, nil
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		if s := done[i]; s.Undo != nil {
			errs = append(errs, s.Undo(d))
		}
	}
	d.lab = from
	d.ctx = context.Background() // the apply's may have ended: taking back must not
	for i := len(undone) - 1; i >= 0; i-- {
		errs = append(errs, undone[i].Do(d))
	}
	if err := m.writeHosts(from); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("apply of lab %s failed: %w; taking it back failed too: %v (apply the file again, or destroy the lab)", from.Name, cause, err)
	}
	st.Applying = nil
	st.Namespaces = slices.DeleteFunc(st.Namespaces, func(r state.NSRecord) bool { return from.Node(r.Node) == nil })
	if err := m.saveState(st); err != nil {
		return fmt.Errorf("apply of lab %s failed: %w; it was taken back, and its state could not be written: %v", from.Name, cause, err)
	}
	return fmt.Errorf("apply of lab %s failed, and the lab is as it was: %w", from.Name, cause)
}

// ApplyScript is the plan of applying lab over its deployed version as
// shell lines: the steps taken back (named), then the file's new steps
// with their iproute2 lines, as deploy --dry-run prints them.
func (m *Manager) ApplyScript(lab *spec.Lab) (string, error) {
	st, err := m.Recorded(lab.Name)
	if err != nil {
		return "", err
	}
	from, err := st.Spec()
	if err != nil {
		return "", err
	}
	if st.Host != "" && lab.OnHost() == "" {
		if lab, err = lab.PartOf(st.Host); err != nil {
			return "", err
		}
	}
	p, err := PlanApply(from, lab, nil)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# nslab apply of lab %s: %d step(s) of the deployed lab taken back, %d of the file's made", lab.Name, len(p.Undo), len(p.Do))
	if len(p.Rebuilt) > 0 {
		fmt.Fprintf(&b, "; node(s) rebuilt whole: %s", strings.Join(p.Rebuilt, ", "))
	}
	b.WriteString("\n")
	going := map[string]bool{}
	for _, s := range p.Undo {
		if s.IsNamespace() {
			going[s.Makes[0]] = true
		}
	}
	n := 0
	for _, s := range p.Undo {
		if !plan.SkipUndo(s, going) {
			n++
			fmt.Fprintf(&b, "\n# take back %d: %s\n%s\n", n, s.Name, strings.Join(undoShell(from, s), "\n"))
		}
	}
	if left := len(p.Undo) - n; left > 0 {
		fmt.Fprintf(&b, "# (%d more need no taking back, or go with the namespaces taken away)\n", left)
	}
	for i, s := range p.Do {
		fmt.Fprintf(&b, "\n# step %d: %s\n%s\n", i+1, s.Name, strings.Join(s.Shell(), "\n"))
	}
	return b.String(), nil
}

// Apply applies lab, the running lab's edited file, while the lab runs
// (see Manager.Apply): for bench's events.
func (r *Running) Apply(ctx context.Context, lab *spec.Lab) (*ApplyResult, error) {
	return r.m.Apply(ctx, lab)
}

// Reopen opens the running lab again as version l of its file (after an
// apply of l): the nodes and interfaces l has, the new ones among them.
func (r *Running) Reopen(l *spec.Lab) (*Running, error) {
	return r.m.Open(l)
}
