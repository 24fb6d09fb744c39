package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/sriov"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// DestroyReport says what a destroy did.
type DestroyReport struct {
	Lab     string
	Removed []string // namespaces removed
	Gone    []string // namespaces that were already gone
	Skipped []string // names left alone, with the reason
	Found   bool     // false when there was no trace of the lab at all
	Stopped int      // the lab's processes stopped
	// Killed names the processes that were still there stopBound after
	// SIGTERM and were killed.
	Killed []string
	// Damaged is what was wrong with the lab's state file when it could
	// not be used (empty when it could); Unproven lists what such a
	// destroy could not find or give back without it.
	Damaged  string
	Unproven []string

	held *holder // the removed namespaces, kept open until every one is unmounted
}

// Destroy removes lab labName completely: every namespace it owns (which
// takes the veths, bridges, addresses, routes and sysctls inside) and its
// state file. It works from the state file alone (the topology file may have
// changed or be gone), after a deploy was killed at any point (the state
// lists namespaces before they exist; markers find them too), and when the
// lab is half gone. Running it again is fine. A namespace whose name is in
// the state but that does not carry this lab's marker is left alone.
func (m *Manager) Destroy(labName string) (*DestroyReport, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return m.destroyLocked(labName)
}

func (m *Manager) destroyLocked(labName string) (*DestroyReport, error) {
	if err := m.checkOwner(labName); err != nil {
		return nil, err
	}
	rep := &DestroyReport{Lab: labName, held: newHolder()}
	defer rep.held.release()
	st, records, err := m.destroyRecords(labName, rep)
	if st == nil && err != nil && len(records) == 0 {
		return nil, err
	}
	errs := []error{err}
	plan := m.removals(labName, st, records, nil)
	for i := 0; i < len(plan); {
		r := plan[i]
		if r.last && errors.Join(errs...) != nil {
			break
		}
		if !r.parallel {
			errs = append(errs, r.Do(rep))
			i++
			continue
		}
		j := i
		for j < len(plan) && plan[j].parallel {
			j++
		}
		errs = append(errs, inParallel(plan[i:j], rep)...)
		i = j
	}
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("destroy lab %s: %w (state kept; run destroy again once fixed)", labName, err)
	}
	return rep, nil
}

// destroyRecords finds the namespaces a destroy removes: those of the
// state file, and, when the state is not complete, every namespace that
// carries this lab's marker.
func (m *Manager) destroyRecords(labName string, rep *DestroyReport) (*state.State, []state.NSRecord, error) {
	st, err := m.loadState(labName)
	var damaged *state.DamagedStateError
	if errors.As(err, &damaged) {
		// Without its state, the lab is what carries its marker.
		rep.Found, rep.Damaged, rep.Unproven = true, damaged.Problem, unprovenWithoutState
		st, err = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	records := map[string]state.NSRecord{}
	if st != nil {
		rep.Found = true
		for _, r := range st.Namespaces {
			records[r.Name] = r
		}
	}
	var scanErr error
	if st == nil || st.Phase != state.PhaseDeployed {
		var found map[string][]state.NSRecord
		found, scanErr = m.Store().ScanOwned(labName)
		for _, r := range found[labName] {
			rep.Found = true
			if _, ok := records[r.Name]; !ok {
				records[r.Name] = r
			}
		}
	}
	out := make([]state.NSRecord, 0, len(records))
	for _, r := range records {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return st, out, scanErr
}

// removal is one named step of a destroy: what Destroy does, and the shell
// lines of the same change, which nslab destroy --dry-run prints.
type removal struct {
	Name     string
	Shell    func() []string
	Do       func(rep *DestroyReport) error
	last     bool // runs only when every earlier removal succeeded
	parallel bool // may run alongside the removals next to it that may too
}

// removers is how many namespaces a destroy removes at once: each removal
// mostly waits in the kernel (an unmount waits for an RCU grace period),
// and waits of several removals overlap (BenchmarkRemoveMany in
// topology/ns measures it).
const removers = 64

// inParallel runs removals at once, each with a report of its own, and
// adds their reports to rep in the plan's order.
func inParallel(plan []removal, rep *DestroyReport) []error {
	reps := make([]DestroyReport, len(plan))
	for k := range reps {
		reps[k].held = rep.held
	}
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	sem := make(chan struct{}, removers)
	for k, r := range plan {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[k] = r.Do(&reps[k])
		}()
	}
	wg.Wait()
	for _, x := range reps {
		rep.Removed = append(rep.Removed, x.Removed...)
		rep.Gone = append(rep.Gone, x.Gone...)
		rep.Skipped = append(rep.Skipped, x.Skipped...)
	}
	return errs
}

// removals is the plan of a destroy of lab labName: VFs back to the host
// first (a namespace deleted with a physical device in it hands the device
// back under a dev%d name), then each namespace that is the lab's, then
// the state file. st is the lab's state (nil when there is none); l, the
// lab's file, only gives the script its VF lines when there is no state.
func (m *Manager) removals(labName string, st *state.State, records []state.NSRecord, l *spec.Lab) []removal {
	netns := m.labNamespaces(labName, records)
	plan := []removal{stopRemoval(labName, st, records, netns), cgroupRemoval(labName, st)}
	nsNames := map[string]string{}
	for _, r := range records {
		nsNames[r.Node] = r.Name
	}
	switch {
	case st != nil:
		plan = append(plan, m.tunnelRemovals(labName, st.Tunnels, nsNames)...)
		plan = append(plan, m.vfRemovals(st)...)
		plan = append(plan, machineRemoval(st)...)
	case l != nil:
		plan = append(plan, m.tunnelRemovals(labName, tunnelRecords(l), nsNames)...)
		plan = append(plan, unrecordedVFs(l)...)
	default: // no state, or a damaged one: the VXLAN devices carry the marker
		plan = append(plan, m.markedTunnelRemoval(labName, records))
	}
	// The views go alongside the namespaces: detaching a lab's views
	// takes as long as removing its namespaces (an RCU grace period each
	// way), and neither needs the other gone.
	plan = append(plan, m.viewRemoval(labName))
	sorted := append([]state.NSRecord(nil), records...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, r := range sorted {
		plan = append(plan, removal{
			Name: "delete namespace " + r.Name,
			Shell: func() []string {
				return []string{fmt.Sprintf("owned %s %s && ip netns del %s", r.Name, nsMarker(labName, r.Node), r.Name)}
			},
			Do:       func(rep *DestroyReport) error { return m.removeOwned(labName, r, st != nil, rep) },
			parallel: true,
		})
	}
	plan = append(plan, heldRemoval(netns))
	return append(plan, removal{
		Name: "forget the lab",
		Shell: func() []string {
			return []string{"rm -rf " + filepath.Join(m.stateDir(), labName), "rm -f " + m.statePath(labName) + " " + m.statePath(labName) + ".tmp"}
		},
		Do:   func(*DestroyReport) error { return errors.Join(m.removeLogs(labName), m.removeState(labName)) },
		last: true,
	})
}

// stopRemoval stops the lab's processes before anything else goes: its
// services and every process in its namespaces (netns, by inode). Its
// script kills what runs in the nodes' namespaces, as a user would by
// hand.
func stopRemoval(labName string, st *state.State, records []state.NSRecord, netns map[uint64]string) removal {
	return removal{
		Name: "stop the lab's processes",
		Shell: func() []string {
			var out []string
			for _, r := range records {
				out = append(out, fmt.Sprintf("ip netns pids %s | xargs -r kill  # node %s's services and anything else running there", r.Name, r.Node))
			}
			return out
		},
		Do: func(rep *DestroyReport) error {
			n, killed, err := stopServices(labName, st, netns)
			rep.Stopped, rep.Killed = n, killed
			return err
		},
	}
}

// heldRemoval fails the destroy when a process still holds one of the
// lab's namespaces (netns) once they are unmounted: the namespace, its
// interfaces and addresses live on while it does.
func heldRemoval(netns map[uint64]string) removal {
	return removal{
		Name: "check that nothing holds the lab's namespaces",
		Shell: func() []string {
			return []string{"# nothing may hold a namespace of the lab's: ls -l /proc/*/ns/net /proc/*/fd shows its net:[INODE]"}
		},
		Do: func(*DestroyReport) error {
			if held := holders(netns); len(held) > 0 {
				return fmt.Errorf("the lab's namespaces are unmounted, but %s: they live on until it ends (stop it, then destroy again)", strings.Join(held, "; "))
			}
			return nil
		},
	}
}

// labNamespaces are the inodes of the network namespaces among records
// that are mounted and proven the lab's (the inode its deploy recorded, or
// else the lab's marker inside), with their names: the processes in them
// are the lab's. Runs in the host's namespace.
func (m *Manager) labNamespaces(labName string, records []state.NSRecord) map[uint64]string {
	out := map[uint64]string{}
	for _, r := range records {
		n, err := ns.Open(m.netnsDir(), r.Name)
		if err != nil {
			continue // gone, or not a namespace: nothing runs in it
		}
		ino, err := n.Inode()
		if err == nil && r.Inode != 0 && ino == r.Inode {
			out[ino] = r.Name
		} else if err == nil && r.Inode == 0 {
			if o, err := deployed.OwnerOfOpen(n); err == nil && o.Lab == labName && o.Node == r.Node {
				out[ino] = r.Name
			}
		}
		n.Close()
	}
	return out
}

// viewRemoval unmounts the lab's views, once nothing runs in them.
func (m *Manager) viewRemoval(labName string) removal {
	return removal{
		Name: "unmount the nodes' views",
		Shell: func() []string {
			script := &Manager{StateDir: DefaultStateDir} // where the deploy script holds them
			dir, views := script.labViews(labName), script.viewsDir()
			// The directory of views goes when no lab has any left: unmounted
			// first (a mount point cannot be removed), then removed.
			return []string{fmt.Sprintf("for f in %s/*; do umount -l \"$f\"; done 2>/dev/null; umount -l %s 2>/dev/null; rm -rf %s; if [ -z \"$(ls -A %s 2>/dev/null)\" ]; then umount -l %s 2>/dev/null; rmdir %s 2>/dev/null; fi; true", dir, dir, dir, views, views, views)}
		},
		Do:       func(*DestroyReport) error { return m.removeViews(labName) },
		parallel: true,
	}
}

// machineRemoval gives the machine-wide sysctls the lab set their old
// values back.
func machineRemoval(st *state.State) []removal {
	if len(st.Machine) == 0 {
		return nil
	}
	var words []string
	for _, r := range st.Machine {
		words = append(words, r.Key+"="+r.Was)
	}
	return []removal{{
		Name:  "give the machine-wide sysctls back: " + strings.Join(words, ", "),
		Shell: func() []string { return []string{"sysctl -q -w " + strings.Join(words, " ")} },
		Do:    func(*DestroyReport) error { return restoreMachine(st.Machine) },
	}}
}

// vfRemovals gives every recorded VF back, newest first, and restores
// each PF's sriov_numvfs.
func (m *Manager) vfRemovals(st *state.State) []removal {
	s := sriov.Sysfs{Root: m.sysfsRoot()}
	var plan []removal
	for i := len(st.SRIOV) - 1; i >= 0; i-- {
		pr := st.SRIOV[i]
		for j := len(pr.VFs) - 1; j >= 0; j-- {
			r := pr.VFs[j]
			plan = append(plan, removal{
				Name:  fmt.Sprintf("give VF %d of %s back to the host as %s", r.Index, pr.PF, r.OrigName),
				Shell: func() []string { return vfBackShell(pr.PF, r) },
				Do:    func(*DestroyReport) error { return m.restoreVF(s, st.Lab, pr.PF, r) },
			})
		}
		if pr.SetNumVFs != 0 {
			plan = append(plan, removal{
				Name:  fmt.Sprintf("restore %s sriov_numvfs to %d", pr.PF, pr.OrigNumVFs),
				Shell: func() []string { return shNumVFsBack(m.Sysfs, pr) },
				Do:    func(*DestroyReport) error { return restoreNumVFs(s, pr) },
			})
		}
	}
	return plan
}

// unrecordedVFs is what the script of a lab that is not deployed can say
// about its VFs: nslab would restore them from its state file.
func unrecordedVFs(l *spec.Lab) []removal {
	var plan []removal
	for _, pf := range l.SRIOV {
		for _, vf := range pf.VFs {
			nsName := l.Namespace(vf.Node)
			plan = append(plan, removal{
				Name: fmt.Sprintf("give VF %d of %s back to the host", vf.Index, pf.Name),
				Shell: func() []string {
					return []string{
						"# (nslab renames it back to its name before deploy and restores its MTU, MAC",
						"# and PF-side settings, all read from its state file; the lab is not deployed now)",
						fmt.Sprintf("ip -n %s link set dev %s down", nsName, vf.Name),
						fmt.Sprintf("ip -n %s link set dev %s netns 1", nsName, vf.Name),
					}
				},
				Do: func(*DestroyReport) error { return nil }, // without a state there is nothing recorded to restore
			})
		}
	}
	return plan
}

// removeOwned removes one namespace after checking that it is this lab's:
// the same nsfs inode as recorded at deploy (cheap: one open and stat), or
// else this lab's marker on its loopback.
func (m *Manager) removeOwned(labName string, r state.NSRecord, recorded bool, rep *DestroyReport) error {
	n, err := ns.Open(m.netnsDir(), r.Name)
	switch {
	case isNotExist(err):
		rep.Gone = append(rep.Gone, r.Name)
		return nil
	case errors.Is(err, ns.ErrNotNamespace):
		// A deploy killed between creating the mount point (O_EXCL, so
		// nobody else's) and mounting on it leaves an empty file.
		if recorded && emptyRegular(m.netnsDir(), r.Name) {
			return m.remove(r.Name, nil, rep)
		}
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: not a namespace, left alone", r.Name))
		return nil
	case err != nil:
		return err
	}
	if ino, err := n.Inode(); err == nil && r.Inode != 0 && ino == r.Inode {
		return m.remove(r.Name, n, rep) // the namespace this lab's deploy made
	}
	o, err := deployed.OwnerOfOpen(n)
	if err != nil {
		n.Close()
		return err
	}
	if o.Lab != labName || o.Node != r.Node {
		n.Close()
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %s, left alone", r.Name, o))
		return nil
	}
	return m.remove(r.Name, n, rep) // the namespace whose marker was read, held
}

// remove unmounts and unlinks the named namespace; n, when not nil, is
// the namespace open, and is handed to the destroy's holder.
func (m *Manager) remove(name string, n *ns.NS, rep *DestroyReport) error {
	err := ns.Remove(m.netnsDir(), name)
	rep.held.keep(n)
	if err != nil {
		return err
	}
	rep.Removed = append(rep.Removed, name)
	return nil
}

// A holder keeps the namespaces of a destroy open until all are
// unmounted, then releases them together. The kernel tears a namespace
// down when its last reference goes; released one by one, the teardown of
// the first ones would take the CPUs from the unmounts of the rest (each
// unmount waits for an RCU grace period), and a destroy of 10,000
// namespaces took 0.42 ms per namespace instead of 0.13 ms at 1,000.
// Held, the unmounts cost the same per namespace at any size, and the
// kernel takes all of them up as one batch. It holds no more descriptors
// than the process may open, less a margin for everything else.
type holder struct {
	mu   sync.Mutex
	open []*ns.NS
	room int
}

// heldMargin is the descriptors a holder leaves for the rest of the
// process (netlink sockets, state and log files).
const heldMargin = 1024

func newHolder() *holder {
	var lim unix.Rlimit
	room := 0
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur > heldMargin {
		room = int(min(lim.Cur-heldMargin, 1<<20))
	}
	return &holder{room: room}
}

// keep holds n (nil is ignored), or closes it at once when the holder is
// full or nil.
func (h *holder) keep(n *ns.NS) {
	if n == nil {
		return
	}
	if h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.open) < h.room {
			h.open = append(h.open, n)
			return
		}
	}
	n.Close()
}

// release closes every namespace held.
func (h *holder) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.open {
		n.Close()
	}
	h.open = nil
}

// DestroyAll destroys every lab that has a state file or a marked namespace.
func (m *Manager) DestroyAll() ([]*DestroyReport, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	labs, err := m.Store().AllLabs()
	if err != nil {
		return nil, err
	}
	var reps []*DestroyReport
	var errs []error
	for _, l := range labs {
		rep, err := m.destroyLocked(l)
		if rep != nil {
			reps = append(reps, rep)
		}
		errs = append(errs, err)
	}
	return reps, errors.Join(errs...)
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

func emptyRegular(dir, name string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(dir+"/"+name, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0
}
