package deployed

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
)

// ParseNSMarker splits "nslab:LAB:NODE"; ok is false for anything else.
func ParseNSMarker(alias string) (labName, node string, ok bool) {
	rest, found := strings.CutPrefix(alias, MarkerPrefix)
	if !found {
		return "", "", false
	}
	labName, node, ok = strings.Cut(rest, ":")
	return labName, node, ok && labName != "" && node != ""
}

// Owner is who a named namespace belongs to.
type Owner struct {
	Lab, Node string // empty when not nslab's
	Inode     uint64
}

// OwnerOf opens the named namespace and reads its marker. It returns an
// error wrapping os.ErrNotExist when the name does not exist and
// ns.ErrNotNamespace when the name is not a namespace mount.
func (m *Store) OwnerOf(name string) (Owner, error) {
	n, err := ns.Open(m.NetnsDirOrDefault(), name)
	if err != nil {
		return Owner{}, err
	}
	defer n.Close()
	return OwnerOfOpen(n)
}

// OwnerOfOpen reads the marker of an open namespace, from its lo.
func OwnerOfOpen(n *ns.NS) (Owner, error) {
	ino, err := n.Inode()
	if err != nil {
		return Owner{}, err
	}
	h, err := n.NetlinkHandle()
	if err != nil {
		return Owner{}, err
	}
	defer h.Close()
	lo, err := nlsafe.LinkByName(h, "lo")
	if err != nil {
		return Owner{}, fmt.Errorf("read marker of namespace %s: %w", n.Name, err)
	}
	labName, node, _ := ParseNSMarker(lo.Attrs().Alias)
	return Owner{Lab: labName, Node: node, Inode: ino}, nil
}

// describeOwner says who owns a namespace, for messages.
func (o Owner) String() string {
	if o.Lab == "" {
		return "not created by nslab"
	}
	return fmt.Sprintf("node %s of nslab lab %s", o.Node, o.Lab)
}

// ScanOwned finds every namespace under NetnsDir that carries a marker of
// labName (or of any lab when labName is empty), grouped by lab.
func (m *Store) ScanOwned(labName string) (map[string][]state.NSRecord, error) {
	names, err := ns.List(m.NetnsDirOrDefault())
	if err != nil {
		return nil, err
	}
	found := map[string][]state.NSRecord{}
	var errs []error
	for _, name := range names {
		o, err := m.OwnerOf(name)
		if err != nil {
			if !errors.Is(err, ns.ErrNotNamespace) && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if o.Lab == "" || (labName != "" && o.Lab != labName) {
			continue
		}
		found[o.Lab] = append(found[o.Lab], state.NSRecord{Node: o.Node, Name: name, Inode: o.Inode})
	}
	return found, errors.Join(errs...)
}

// AllLabs lists labs known by a state file or by a marked namespace.
func (m *Store) AllLabs() ([]string, error) {
	labs, err := m.StateLabs()
	if err != nil {
		return nil, err
	}
	found, err := m.ScanOwned("")
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
