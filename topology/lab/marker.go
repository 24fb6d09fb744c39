package lab

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
)

// markerPrefix starts every ifalias nslab sets.
const markerPrefix = deployed.MarkerPrefix

// nsMarker is the ifalias of a lab namespace's loopback.
func nsMarker(labName, node string) string { return deployed.NSMarker(labName, node) }

// linkMarker is the ifalias of every veth end and bridge nslab creates.
func linkMarker(labName string) string { return markerPrefix + labName }

// parseNSMarker splits "nslab:LAB:NODE"; ok is false for anything else.
func parseNSMarker(alias string) (labName, node string, ok bool) {
	rest, found := strings.CutPrefix(alias, markerPrefix)
	if !found {
		return "", "", false
	}
	labName, node, ok = strings.Cut(rest, ":")
	return labName, node, ok && labName != "" && node != ""
}

// owner is who a named namespace belongs to.
type owner struct {
	lab, node string // empty when not nslab's
	inode     uint64
}

// ownerOf opens the named namespace and reads its marker. It returns an
// error wrapping os.ErrNotExist when the name does not exist and
// ns.ErrNotNamespace when the name is not a namespace mount.
func (m *Manager) ownerOf(name string) (owner, error) {
	n, err := ns.Open(m.netnsDir(), name)
	if err != nil {
		return owner{}, err
	}
	defer n.Close()
	return ownerOfOpen(n)
}

// ownerOfOpen reads the marker of an open namespace, from its lo.
func ownerOfOpen(n *ns.NS) (owner, error) {
	ino, err := n.Inode()
	if err != nil {
		return owner{}, err
	}
	h, err := n.NetlinkHandle()
	if err != nil {
		return owner{}, err
	}
	defer h.Close()
	lo, err := nlsafe.LinkByName(h, "lo")
	if err != nil {
		return owner{}, fmt.Errorf("read marker of namespace %s: %w", n.Name, err)
	}
	labName, node, _ := parseNSMarker(lo.Attrs().Alias)
	return owner{lab: labName, node: node, inode: ino}, nil
}

// describeOwner says who owns a namespace, for messages.
func (o owner) String() string {
	if o.lab == "" {
		return "not created by nslab"
	}
	return fmt.Sprintf("node %s of nslab lab %s", o.node, o.lab)
}

// scanOwned finds every namespace under NetnsDir that carries a marker of
// labName (or of any lab when labName is empty), grouped by lab.
func (m *Manager) scanOwned(labName string) (map[string][]state.NSRecord, error) {
	names, err := ns.List(m.netnsDir())
	if err != nil {
		return nil, err
	}
	found := map[string][]state.NSRecord{}
	var errs []error
	for _, name := range names {
		o, err := m.ownerOf(name)
		if err != nil {
			if !errors.Is(err, ns.ErrNotNamespace) && !isNotExist(err) {
				errs = append(errs, err)
			}
			continue
		}
		if o.lab == "" || (labName != "" && o.lab != labName) {
			continue
		}
		found[o.lab] = append(found[o.lab], state.NSRecord{Node: o.node, Name: name, Inode: o.inode})
	}
	return found, errors.Join(errs...)
}
