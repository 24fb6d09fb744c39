package kube

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/spec"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestRemoveKeepsANewLabsMark: an agent removing its share of a deleted
// Lab takes its finalizer off that Lab only, never off a new Lab made
// with the same name meanwhile (whose share it has yet to build: taking
// its mark off would let that Lab go with the share left on the host).
func TestRemoveKeepsANewLabsMark(t *testing.T) {
	file := []byte(strings.Replace(lab3, "c: {node_selector: {role: server}}", "c: {underlay: 192.0.2.3}", 1))
	plan, err := PlanFile("k3.yaml", file)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := NewLab("ns1", plan, file, spec.FileSHA(file), nil)
	old.SetUID(types.UID("old"))
	fresh, _ := NewLab("ns1", plan, file, spec.FileSHA(file), nil)
	fresh.SetUID(types.UID("new"))
	t.Setenv("TMPDIR", t.TempDir()) // where the share keeps the lab's file
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{Labs: "LabList"}, fresh)
	a := &Agent{Node: "a", Client: client, Log: io.Discard, shares: map[string]*fleet.Agent{}, built: map[string]string{},
		Share: func() *fleet.Agent {
			return &fleet.Agent{Exe: "/bin/true", Argv: func(string, string, []string) []string { return nil }} // the destroy succeeds
		}}
	t.Cleanup(func() {
		for _, s := range a.shares {
			s.Close()
		}
	})
	marks := func() []string {
		u, err := client.Resource(Labs).Namespace("ns1").Get(context.Background(), "k3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetFinalizers()
	}
	for _, c := range []struct {
		removed *Lab
		left    int
	}{{must(ReadLab(old)), 3}, {must(ReadLab(fresh)), 2}} {
		if err := a.remove(context.Background(), c.removed, "ns1/k3", "a"); err != nil {
			t.Fatal(err)
		}
		if got := marks(); len(got) != c.left {
			t.Errorf("after removing host a's share of Lab %s: the new Lab's finalizers %v, want %d", c.removed.UID, got, c.left)
		}
	}
}

func must(l *Lab, err error) *Lab {
	if err != nil {
		panic(err)
	}
	return l
}
