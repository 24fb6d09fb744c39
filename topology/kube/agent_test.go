package kube

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/spec"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// fakeShare stands in for nslab's verbs on a node: it records each verb
// and answers as the test says.
type fakeShare struct {
	refuse error // Take's answer: a plan this node does not agree with
	runs   *[]string
	answer func(verb string) fleet.Response
}

func (f *fakeShare) Take(*fleet.Plan, string, []byte) error { return f.refuse }
func (f *fakeShare) TakeName(string, string)                {}
func (f *fakeShare) Close()                                 {}
func (f *fakeShare) Run(_ context.Context, args ...string) (fleet.Response, error) {
	*f.runs = append(*f.runs, args[0])
	if f.answer != nil {
		return f.answer(args[0]), nil
	}
	return fleet.Response{Stdout: args[0] + " done\n"}, nil
}

// bench is an agent of node a with a fake client holding one Lab k3 of
// three hosts (host a on node a), and what it runs.
type bench struct {
	t      *testing.T
	client *dynamicfake.FakeDynamicClient
	agent  *Agent
	share  *fakeShare
	runs   []string
}

func newBench(t *testing.T) *bench {
	t.Helper()
	file := []byte(strings.Replace(lab3, "c: {node_selector: {role: server}}", "c: {underlay: 192.0.2.3}", 1))
	plan, err := PlanFile("k3.yaml", file)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := NewLab("ns1", plan, file, spec.FileSHA(file), nil)
	u.SetUID(types.UID("uid1"))
	b := &bench{t: t}
	b.client = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{Labs: "LabList"}, u)
	b.share = &fakeShare{runs: &b.runs}
	b.agent = &Agent{Node: "a", Client: b.client, Log: io.Discard, Share: func() Share { return b.share }}
	return b
}

// lab is the Lab as the API server holds it.
func (b *bench) lab() *unstructured.Unstructured {
	u, err := b.client.Resource(Labs).Namespace("ns1").Get(context.Background(), "k3", metav1.GetOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// reconcile runs one reconcile of the Lab as the API server holds it now
// (the informer's cache brought up to date).
func (b *bench) reconcile() error {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.Add(b.lab()); err != nil {
		b.t.Fatal(err)
	}
	return b.agent.reconcile(context.Background(), idx, "ns1/k3")
}

func (b *bench) host(h string) HostStatus {
	l, err := ReadLab(b.lab())
	if err != nil {
		b.t.Fatal(err)
	}
	return l.Status.Hosts[h]
}

// setStatus writes host h's status as another agent would.
func (b *bench) setStatus(h, phase string) {
	l, _ := ReadLab(b.lab())
	b.agent.init()
	saved := b.agent.Node
	if err := b.agent.writeStatus(context.Background(), l, h, HostStatus{Phase: phase, PlanHash: l.Plan.Hash}); err != nil {
		b.t.Fatal(err)
	}
	b.agent.Node = saved
}

func (b *bench) delete() {
	u := b.lab()
	now := metav1.Now()
	u.SetDeletionTimestamp(&now)
	if _, err := b.client.Resource(Labs).Namespace("ns1").Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		b.t.Fatal(err)
	}
}

// TestAgentBuilds: a Lab placed on the node is deployed once, its host's
// status Deployed with the plan; the lab is Deployed when every host is.
func TestAgentBuilds(t *testing.T) {
	b := newBench(t)
	b.share.answer = func(verb string) fleet.Response {
		if verb == "inspect" {
			return fleet.Response{Stdout: `{"owner": "Kubernetes Lab ns1/k3 (uid uid1)", "nodes": [{"node": "client", "present": true}]}`}
		}
		return fleet.Response{Stdout: "deployed lab k3\n"}
	}
	for range 2 {
		if err := b.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.host("a"); st.Phase != Deployed || st.Message != "deployed lab k3" || st.Node != "a" {
		t.Errorf("host a: %+v", st)
	}
	if !slices.Equal(b.runs, []string{"deploy", "inspect"}) {
		t.Errorf("ran %v, want a deploy, then an inspect of the share built", b.runs)
	}
	b.setStatus("b", Deployed)
	b.setStatus("c", Deployed)
	if l, _ := ReadLab(b.lab()); l.Status.Phase != Deployed || l.Status.Ready != "3/3" {
		t.Errorf("the lab: %s %s", l.Status.Phase, l.Status.Ready)
	}
}

// TestAgentRefusedPlanDeletable: a plan the node refuses is Failed with
// why; the Lab deleted, the agent destroys by the lab's name (no plan
// needed) and takes its finalizer off.
func TestAgentRefusedPlanDeletable(t *testing.T) {
	b := newBench(t)
	b.share.refuse = errors.New("the plan's VNI of link 1 is 7, this host computes 9")
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := b.host("a"); st.Phase != Failed || !strings.Contains(st.Message, "plan refused: the plan's VNI") {
		t.Errorf("host a: %+v", st)
	}
	if l, _ := ReadLab(b.lab()); l.Status.Phase != Failed {
		t.Errorf("the lab: %s", l.Status.Phase)
	}
	b.delete()
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if fins := b.lab().GetFinalizers(); slices.Contains(fins, Finalizer("a")) || len(fins) != 2 {
		t.Errorf("finalizers %v: host a's should be off, b's and c's on", fins)
	}
	if !slices.Equal(b.runs, []string{"destroy"}) {
		t.Errorf("ran %v, want one destroy", b.runs)
	}
}

// TestAgentStatusWriteFails: a status write that fails leaves the share
// not marked built; the next reconcile writes the status it kept and
// does not deploy again, and the host ends Deployed.
func TestAgentStatusWriteFails(t *testing.T) {
	b := newBench(t)
	fail := 1
	b.client.PrependReactor("patch", "labs", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail > 0 {
			fail--
			return true, nil, errors.New("injected: etcd timed out")
		}
		return false, nil, nil
	})
	if err := b.reconcile(); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("reconcile: %v, want the write's error (the queue tries again)", err)
	}
	if st := b.host("a"); st.Phase != "" {
		t.Fatalf("host a's status %+v before any write succeeded", st)
	}
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := b.host("a"); st.Phase != Deployed {
		t.Errorf("host a: %+v", st)
	}
	if !slices.Equal(b.runs, []string{"deploy"}) {
		t.Errorf("ran %v, want one deploy: the status kept is written, the share not built again", b.runs)
	}
}

// TestAgentUnreadableLab: a Lab nslab cannot read gets phase Invalid and
// why in its status, written once.
func TestAgentUnreadableLab(t *testing.T) {
	b := newBench(t)
	u := b.lab()
	unstructured.RemoveNestedField(u.Object, "spec", "plan")
	if _, err := b.client.Resource(Labs).Namespace("ns1").Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	phase, _, _ := unstructured.NestedString(b.lab().Object, "status", "phase")
	msg, _, _ := unstructured.NestedString(b.lab().Object, "status", "message")
	if phase != Invalid || !strings.Contains(msg, "spec.plan is missing") {
		t.Errorf("status %s %q", phase, msg)
	}
	patches := 0
	for _, a := range b.client.Actions() {
		if a.GetVerb() == "patch" {
			patches++
		}
	}
	if patches != 1 || len(b.runs) != 0 {
		t.Errorf("%d status writes and verbs %v: want one write and no verb", patches, b.runs)
	}
}

// TestAgentDrift: a built share whose node namespace, or view, is gone is Drifted,
// the lab too; whole again, it is Deployed again. An agent that did not
// build the share (a restarted pod) says it took it up.
func TestAgentDrift(t *testing.T) {
	b := newBench(t)
	present, view := true, ""
	b.share.answer = func(verb string) fleet.Response {
		if verb == "inspect" {
			p := "true"
			if !present {
				p = "false"
			}
			return fleet.Response{Stdout: `{"owner": "Kubernetes Lab ns1/k3 (uid uid1)", "nodes": [{"node": "client", "present": ` + p + `, "view_gone": "` + view + `"}]}`}
		}
		return fleet.Response{Stdout: "deployed\n"}
	}
	b.setStatus("a", Deployed) // built by the agent's pod before this one
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := b.host("a"); st.Phase != Deployed || !strings.Contains(st.Message, "taken up by this agent: 1 nodes present") {
		t.Errorf("host a after a restart: %+v", st)
	}
	present = false
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := b.host("a"); st.Phase != Drifted || st.Message != "node client's namespace is gone" {
		t.Errorf("host a after its namespace went: %+v", st)
	}
	if l, _ := ReadLab(b.lab()); l.Status.Phase != Drifted {
		t.Errorf("the lab: %s", l.Status.Phase)
	}
	present, view = true, "its view is gone"
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := b.host("a"); st.Phase != Drifted || !strings.HasPrefix(st.Message, "node client's view is gone") {
		t.Errorf("host a after its node's view went: %+v", st)
	}
	view = ""
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := b.host("a"); st.Phase != Deployed {
		t.Errorf("host a whole again: %+v", st)
	}
	if slices.Contains(b.runs, "deploy") {
		t.Errorf("ran %v: a share found built is never deployed again", b.runs)
	}
}

// TestRemoveKeepsANewLabsMark: an agent removing its share of a deleted
// Lab takes its finalizer off that Lab only, never off a new Lab made
// with the same name meanwhile (whose share it has yet to build: taking
// its mark off would let that Lab go with the share left on the host).
func TestRemoveKeepsANewLabsMark(t *testing.T) {
	b := newBench(t)
	fresh := b.lab()
	for _, c := range []struct {
		uid  string
		left int
	}{{"old", 3}, {"uid1", 2}} {
		if err := b.agent.remove(context.Background(), "ns1", "k3", c.uid, "owner", "ns1/k3", "a", fresh.GetFinalizers()); err != nil {
			t.Fatal(err)
		}
		if got := b.lab().GetFinalizers(); len(got) != c.left {
			t.Errorf("after removing host a's share of Lab %s: the new Lab's finalizers %v, want %d", c.uid, got, c.left)
		}
	}
}
