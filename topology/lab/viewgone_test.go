package lab

import (
	"errors"
	"testing"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/ns"
)

// TestPrivilegedViewGoneIsSaid: a deployed node whose view was unmounted
// by hand (as a restarted container's private mounts go) is named by
// inspect (view_gone), and nothing is opened in it outside its view: the
// error names the lab to deploy again. Its neighbour's view is there.
func TestPrivilegedViewGoneIsSaid(t *testing.T) {
	f := newFixture(t, "pair.yaml")
	f.deploy()
	gone, kept := f.lab.Nodes[0].Name, f.lab.Nodes[1].Name
	if err := ns.RemoveView(f.m.viewsDir(), f.m.labViews(f.lab.Name), f.ns(gone)); err != nil {
		t.Fatal(err)
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range info.Nodes {
		if said := n.ViewGone != ""; said != (n.Node == gone) || !n.Present {
			t.Errorf("inspect of node %s: present %v, view_gone %q", n.Node, n.Present, n.ViewGone)
		}
	}
	_, _, err = f.m.Store().OpenNode(f.lab.Name, gone)
	var vg *deployed.ViewGoneError
	if !errors.Is(err, deployed.ErrViewGone) || !errors.As(err, &vg) || vg.LabToDestroy() != f.lab.Name {
		t.Errorf("opening node %s without its view: %v", gone, err)
	}
	n, v, err := f.m.Store().OpenNode(f.lab.Name, kept)
	if err != nil || v == nil {
		t.Fatalf("opening node %s: %v", kept, err)
	}
	n.Close()
	v.Close()
}
