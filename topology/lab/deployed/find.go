package deployed

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// FindNode resolves a node to the name of its namespace in a deployed lab.
// With labName empty, node may be a node name or a namespace name of any
// deployed lab, or LAB:NODE; a name that more than one lab has is refused
// with the candidates listed.
func (m *Store) FindNode(labName, node string) (string, error) {
	_, _, nsName, err := m.LocateNode(labName, node)
	return nsName, err
}

// LocateNode is FindNode that also returns the lab the node is in and the
// node's name there (node may have been a namespace name).
func (m *Store) LocateNode(labName, node string) (foundLab, foundNode, nsName string, err error) {
	if labName == "" {
		if l, n, ok := strings.Cut(node, ":"); ok {
			labName, node = l, n
		}
	}
	labs := []string{labName}
	if labName == "" {
		var err error
		if labs, err = m.StateLabs(); err != nil {
			return "", "", "", err
		}
	}
	var matches []string
	for _, l := range labs {
		st, err := m.LoadState(l)
		if err != nil {
			return "", "", "", err
		}
		if st == nil {
			return "", "", "", fmt.Errorf("lab %s: %w here: deploy it first (nslab deploy FILE), or see the labs deployed with nslab inspect", l, ErrNotDeployed)
		}
		for _, r := range st.Namespaces {
			if r.Node == node || r.Name == node {
				matches = append(matches, l+":"+r.Node)
				foundLab, foundNode, nsName = l, r.Node, r.Name
			}
		}
	}
	switch len(matches) {
	case 0:
		if labName != "" {
			return "", "", "", fmt.Errorf("lab %s has no node %s%s", labName, node, m.nodesOf(labName, node))
		}
		return "", "", "", fmt.Errorf("no deployed lab has a node %s (see nslab inspect)", node)
	case 1:
		return foundLab, foundNode, nsName, nil
	}
	sort.Strings(matches)
	return "", "", "", fmt.Errorf("node %s is in several labs (%s): name one as LAB:NODE", node, strings.Join(matches, ", "))
}

// OpenNode opens a deployed node's network namespace and its view (nil
// for a lab deployed without views), for running programs there as
// nslab exec does. The caller closes both.
func (m *Store) OpenNode(labName, node string) (*ns.NS, *ns.View, error) {
	foundLab, _, nsName, err := m.LocateNode(labName, node)
	if err != nil {
		return nil, nil, err
	}
	n, err := ns.Open(m.NetnsDirOrDefault(), nsName)
	if err != nil {
		return nil, nil, err
	}
	v, err := m.OpenView(foundLab, nsName)
	if err != nil {
		n.Close()
		return nil, nil, err
	}
	return n, v, nil
}

// nodesOf says which nodes lab labName has, with the one most like node
// when one is (a unique best match: ns4 among ns1, ns2 and ns3 is none).
func (m *Store) nodesOf(labName, node string) string {
	st, err := m.LoadState(labName)
	if err != nil || st == nil || len(st.Namespaces) == 0 {
		return ""
	}
	var names []string
	for _, r := range st.Namespaces {
		names = append(names, r.Node)
	}
	out := " (its nodes: " + strings.Join(names, ", ") + ")"
	if n := spec.NearestOnly(node, names); n != "" {
		out = "; did you mean " + n + "?" + out
	}
	return out
}
