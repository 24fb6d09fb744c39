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

	"golang.org/x/sys/unix"

	"github.com/nslab/nslab/topology/cgroup"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// DeployResult describes a finished deploy.
type DeployResult struct {
	Lab      string
	Steps    int
	Duration time.Duration
	// Warnings are what the deploy went on past: configuration lines a
	// routing daemon refused (see Manager.Strict).
	Warnings []string
}

// StepError is a deploy failure: the step that failed, its position, and the
// cause. Everything the deploy had created has been removed when it is
// returned (RollbackErr says otherwise).
type StepError struct {
	Index       int // 0-based position in the plan
	Step        string
	Err         error
	RollbackErr error
}

func (e *StepError) Error() string {
	msg := fmt.Sprintf("step %d (%s): %v", e.Index+1, e.Step, e.Err)
	if e.RollbackErr != nil {
		msg += fmt.Sprintf("; rollback incomplete: %v", e.RollbackErr)
	} else {
		msg += "; everything created was removed"
	}
	return msg
}

func (e *StepError) Unwrap() error { return e.Err }

// ConflictError is returned when the lab cannot be deployed without touching
// something that exists already. Nothing was changed.
type ConflictError struct {
	Problems        []string
	AlreadyDeployed bool // the only problem: this lab is deployed already
	// Destroy is the lab whose destroy (by name) clears the conflict: an
	// interrupted deploy's or the deployed lab's ("": none would).
	Destroy string
}

// LabToDestroy is the lab to destroy by name to clear e ("": none); the
// front end says how its user does that.
func (e *ConflictError) LabToDestroy() string { return e.Destroy }

func (e *ConflictError) Error() string {
	shown := e.Problems
	if len(shown) > maxProblemsShown {
		shown = append(slices.Clone(shown[:maxProblemsShown]), fmt.Sprintf("and %d more of the same kinds", len(e.Problems)-maxProblemsShown))
	}
	return "cannot deploy, nothing was changed:\n  " + strings.Join(shown, "\n  ")
}

// maxProblemsShown is how many of a refused deploy's problems its message
// lists (a lab of 1,000 nodes whose namespaces all exist has 1,000).
const maxProblemsShown = 20

// Deploy builds lab on this machine, recording its file's contents (for
// destroy and inspect). It is atomic: when a step fails or ctx is
// cancelled, everything created so far is removed and a *StepError is
// returned (wrapping ctx.Err() on cancel).
func (m *Manager) Deploy(ctx context.Context, lab *spec.Lab) (*DeployResult, error) {
	start := time.Now()
	// Before the lock, which creates the state directory: a deploy whose
	// namespaces would vanish with this process changes nothing.
	if err := ns.CheckDir(m.netnsDir()); err != nil && !m.Ephemeral {
		return nil, fmt.Errorf("cannot deploy, nothing was changed: %w", err)
	}
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := m.preflight(lab); err != nil {
		return nil, err
	}
	if err := CheckPrograms(lab); err != nil {
		return nil, fmt.Errorf("cannot deploy, nothing was changed: %w", err)
	}
	if err := CheckKernel(lab); err != nil {
		return nil, fmt.Errorf("cannot deploy, nothing was changed: %w", err)
	}
	abs, err := filepath.Abs(lab.File)
	if err != nil {
		abs = lab.File
	}
	st := &state.State{
		Version: state.Version, Lab: lab.Name, File: abs, SHA256: lab.SHA256, Owner: m.Owner, Prefix: lab.PrefixGiven(),
		Source: string(lab.Source), Phase: state.PhaseDeploying, PID: os.Getpid(), Started: start,
		Unplaced: lab.Unplaced, Host: lab.OnHost(), Tunnels: tunnelRecords(lab),
	}
	for _, n := range lab.Nodes {
		st.Namespaces = append(st.Namespaces, state.NSRecord{Node: n.Name, Name: lab.Namespace(n.Name)})
	}
	// Written ahead: from here on, destroy finds every namespace this
	// deploy may create, even if this process is killed.
	if err := m.saveState(st); err != nil {
		return nil, err
	}
	d := &deployer{ctx: ctx, m: m, lab: lab, st: st, inodes: map[string]uint64{}, handles: map[string]*netlink.Handle{}, index: map[spec.Endpoint]int{}}
	defer d.close()
	steps := Plan(lab)
	d.expect(steps)
	for i, s := range steps {
		if i == d.aheadAt {
			d.startAhead(steps[i:])
		}
		err := ctx.Err()
		if err == nil && m.BeforeStep != nil {
			err = m.BeforeStep(ctx, i, s)
		}
		if err == nil {
			err = s.Do(d)
		}
		if err != nil {
			d.close()
			return nil, &StepError{Index: i, Step: s.Name, Err: err, RollbackErr: m.rollback(d, st)}
		}
		if m.Progress != nil {
			m.Progress(i+1, len(steps), s.Name)
		}
	}
	for i := range st.Namespaces {
		st.Namespaces[i].Inode = d.inodes[st.Namespaces[i].Node]
	}
	st.Phase, st.Deployed = state.PhaseDeployed, time.Now()
	if err := m.saveState(st); err != nil {
		d.close()
		return nil, &StepError{Index: len(steps), Step: "record deployed state", Err: err, RollbackErr: m.rollback(d, st)}
	}
	return &DeployResult{Lab: lab.Name, Steps: len(steps), Duration: time.Since(start), Warnings: d.warnings}, nil
}

// preflight checks, without changing anything, that the lab can be deployed:
// it is not deployed already and none of its namespace names is taken.
func (m *Manager) preflight(lab *spec.Lab) error {
	st, err := m.loadState(lab.Name)
	if err != nil {
		return err
	}
	if st != nil {
		if st.Phase == state.PhaseDeploying && !state.Alive(st.PID) {
			return &ConflictError{Problems: []string{fmt.Sprintf("a deploy of lab %s was interrupted (pid %d is gone): destroy the lab to clean up", lab.Name, st.PID)}, Destroy: lab.Name}
		}
		if st.Owner != m.Owner {
			return &ConflictError{Problems: []string{fmt.Sprintf("another lab named %s is deployed here (since %s, from %s, %s): it was left as it is; give this lab another name", lab.Name, st.Started.Format(time.RFC3339), st.File, ownerWords(st.Owner))}, AlreadyDeployed: true}
		}
		return &ConflictError{Problems: []string{fmt.Sprintf("lab %s is already deployed (since %s, from %s): destroy it first", lab.Name, st.Started.Format(time.RFC3339), st.File)}, AlreadyDeployed: true, Destroy: lab.Name}
	}
	var problems []string
	others := map[string]bool{} // the other nslab labs whose namespaces are in the way
	for _, n := range lab.Nodes {
		name := lab.Namespace(n.Name)
		exists, err := ns.Exists(m.netnsDir(), name)
		if err != nil {
			return err
		}
		if !exists {
			continue
		}
		o, err := m.Store().OwnerOf(name)
		if err == nil && o.Lab != "" {
			others[o.Lab] = true
			problems = append(problems, fmt.Sprintf("namespace %s (node %s) is %s: nslab will not touch it; destroy that lab, or give this one another namespace prefix", name, n.Name, o))
			continue
		}
		problems = append(problems, fmt.Sprintf("namespace %s (node %s) already exists (not created by nslab): nslab will not touch it; remove it yourself, or give this lab another namespace prefix", name, n.Name))
	}
	problems = append(problems, m.checkPFs(lab)...)
	problems = append(problems, m.checkPlacement(lab)...)
	problems = append(problems, checkQdiscs(lab)...)
	problems = append(problems, checkKinds(lab)...)
	problems = append(problems, checkNetfilter(lab)...)
	problems = append(problems, checkTunnels(lab)...)
	problems = append(problems, checkLimits(lab)...)
	problems = append(problems, m.checkRootless(lab)...)
	if p := ensureFiles(len(lab.Nodes)); p != "" {
		problems = append(problems, p)
	}
	if len(problems) > 0 && len(others) == 1 {
		for other := range others {
			return &ConflictError{Problems: problems, Destroy: other}
		}
	}
	if len(problems) > 0 {
		return &ConflictError{Problems: problems}
	}
	return nil
}

// filesPerNode is what a deploy keeps open per node: a netlink socket
// inside its namespace (see deployer.inNS).
const filesPerNode = 1

// ensureFiles raises this process's limit of open files to what a deploy
// of nodes needs (a lab of 10,000 nodes needs 20,000 and more; root may
// raise even the hard limit, up to fs.nr_open), or says why it cannot.
func ensureFiles(nodes int) string {
	need := uint64(filesPerNode*nodes + 256)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= need {
		return ""
	}
	want := unix.Rlimit{Cur: need, Max: max(lim.Max, need)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		return fmt.Sprintf("the lab's %d nodes need %d open files, and this process may open %d (hard limit %d) and cannot raise it (%v): raise ulimit -n, or fs.nr_open", nodes, need, lim.Cur, lim.Max, err)
	}
	return ""
}

// rollback removes what a failed deploy created, newest first, and the state
// file when that succeeded. Namespace removal takes every object inside.
func (m *Manager) rollback(d *deployer, st *state.State) error {
	// Services stop, VFs and machine-wide sysctls go back to the host,
	// before the namespaces go.
	_, _, err := stopServices(st.Lab, st, m.labNamespaces(st.Lab, st.Namespaces))
	errs := []error{err, cgroup.Remove(labCgroups(st.Lab, st)), m.removeViews(st.Lab), m.restoreSRIOV(st), restoreMachine(st.Machine)}
	// A VXLAN interface goes before its namespace: one left in a namespace
	// the kernel tears down in the background keeps its VNI taken.
	for _, r := range st.Tunnels {
		errs = append(errs, releaseTunnel(m.netnsDir(), d.lab.Namespace(r.Node), st.Lab, r), removeTunnel(r))
	}
	for i := len(d.created) - 1; i >= 0; i-- {
		if err := ns.Remove(m.netnsDir(), d.created[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return errors.Join(m.removeLogs(st.Lab), m.removeState(st.Lab))
}
