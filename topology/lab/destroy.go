package lab

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// DestroyReport says what a destroy did.
type DestroyReport struct {
	Lab     string
	Removed []string // namespaces removed
	Gone    []string // namespaces that were already gone
	Skipped []string // names left alone, with the reason
	Found   bool     // false when there was no trace of the lab at all
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
	rep := &DestroyReport{Lab: labName}
	st, err := m.loadState(labName)
	if err != nil {
		return nil, err
	}
	records := map[string]NSRecord{}
	if st != nil {
		rep.Found = true
		for _, r := range st.Namespaces {
			records[r.Name] = r
		}
	}
	// Without a complete state, markers are the record: find every
	// namespace that says it belongs to this lab.
	var errs []error
	if st == nil || st.Phase != PhaseDeployed {
		found, err := m.scanOwned(labName)
		errs = append(errs, err)
		for _, r := range found[labName] {
			rep.Found = true
			if _, ok := records[r.Name]; !ok {
				records[r.Name] = r
			}
		}
	}
	// VFs go back to the host before their namespaces go.
	if st != nil {
		errs = append(errs, m.restoreSRIOV(st))
	}
	names := make([]string, 0, len(records))
	for name := range records {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		errs = append(errs, m.removeOwned(labName, records[name], st != nil, rep))
	}
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("destroy lab %s: %w (state kept; run destroy again once fixed)", labName, err)
	}
	return rep, m.removeState(labName)
}

// removeOwned removes one namespace after checking that it is this lab's:
// the same nsfs inode as recorded at deploy (cheap: one open and stat), or
// else this lab's marker on its loopback.
func (m *Manager) removeOwned(labName string, r NSRecord, recorded bool, rep *DestroyReport) error {
	if r.Inode != 0 && m.inodeOf(r.Name) == r.Inode {
		return m.remove(r.Name, rep)
	}
	o, err := m.ownerOf(r.Name)
	switch {
	case isNotExist(err):
		rep.Gone = append(rep.Gone, r.Name)
		return nil
	case errors.Is(err, ns.ErrNotNamespace):
		// A deploy killed between creating the mount point (O_EXCL, so
		// nobody else's) and mounting on it leaves an empty file.
		if recorded && emptyRegular(m.netnsDir(), r.Name) {
			return m.remove(r.Name, rep)
		}
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: not a namespace, left alone", r.Name))
		return nil
	case err != nil:
		return err
	}
	if o.lab != labName || o.node != r.Node {
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %s, left alone", r.Name, o))
		return nil
	}
	return m.remove(r.Name, rep)
}

func (m *Manager) remove(name string, rep *DestroyReport) error {
	if err := ns.Remove(m.netnsDir(), name); err != nil {
		return err
	}
	rep.Removed = append(rep.Removed, name)
	return nil
}

// inodeOf returns the nsfs inode of a named namespace, or 0.
func (m *Manager) inodeOf(name string) uint64 {
	n, err := ns.Open(m.netnsDir(), name)
	if err != nil {
		return 0
	}
	defer n.Close()
	ino, _ := n.Inode()
	return ino
}

// DestroyAll destroys every lab that has a state file or a marked namespace.
func (m *Manager) DestroyAll() ([]*DestroyReport, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	labs, err := m.allLabs()
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

// allLabs lists labs known by a state file or by a marked namespace.
func (m *Manager) allLabs() ([]string, error) {
	labs, err := m.stateLabs()
	if err != nil {
		return nil, err
	}
	found, err := m.scanOwned("")
	seen := map[string]bool{}
	for _, l := range labs {
		seen[l] = true
	}
	for l := range found {
		if !seen[l] {
			labs = append(labs, l)
		}
	}
	sort.Strings(labs)
	return labs, err
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

func openNS(dir, name string) (*ns.NS, error) { return ns.Open(dir, name) }

func emptyRegular(dir, name string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(dir+"/"+name, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0
}
