package kube

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

const lab3 = `name: k3
hosts:
  a: {underlay: 192.0.2.1}
  b: {underlay: 192.0.2.2}
  c: {node_selector: {role: server}}
nodes:
  client: {host: a}
  router: {host: b, forwarding: true}
  server: {host: c}
links:
  - endpoints: [client:eth0, router:eth0]
  - endpoints: [router:eth1, server:eth0]
`

func node(name, ip string, labels map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "labels": labels}}}
	if ip != "" {
		u.Object["status"] = map[string]any{"addresses": []any{map[string]any{"type": "Hostname", "address": name}, map[string]any{"type": "InternalIP", "address": ip}}}
	}
	return u
}

// TestPlace: the host with node_selector: goes to the first matching node
// by name that holds no host (b holds host b), and gets its InternalIP;
// the plan of the file with it written in puts c's VXLAN towards it.
func TestPlace(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(),
		node("b", "192.0.2.2", map[string]any{"role": "server"}),
		node("z9", "192.0.2.30", map[string]any{"role": "server"}),
		node("m1", "192.0.2.3", map[string]any{"role": "server"}),
		node("other", "192.0.2.4", map[string]any{"role": "client"}))
	l, err := spec.Parse("k3.yaml", []byte(lab3))
	if err != nil {
		t.Fatal(err)
	}
	p, underlays, err := Place(context.Background(), client, l)
	if err != nil {
		t.Fatal(err)
	}
	if p["a"] != "a" || p["b"] != "b" || p["c"] != "m1" || underlays["c"] != netip.MustParseAddr("192.0.2.3") || len(underlays) != 1 {
		t.Fatalf("placement %v, underlays %v", p, underlays)
	}
	placed, err := spec.WithUnderlays([]byte(lab3), underlays)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanFile("k3.yaml", placed)
	if err != nil {
		t.Fatalf("%v\n%s", err, placed)
	}
	if tun := plan.Share("b").Tunnels; len(tun) != 2 || tun[1].RemoteIP != netip.MustParseAddr("192.0.2.3") {
		t.Errorf("b's tunnels: %+v", tun)
	}
	if !strings.Contains(string(placed), "role: server") {
		t.Errorf("the placed file lost the selector:\n%s", placed)
	}
}

// TestPlaceNoFreeNode: every node with the labels holds a host: the error
// names the host, the selector and who holds what.
func TestPlaceNoFreeNode(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), node("b", "192.0.2.2", map[string]any{"role": "server"}))
	l, err := spec.Parse("k3.yaml", []byte(lab3))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Place(context.Background(), client, l)
	if err == nil || !strings.Contains(err.Error(), "hosts.c.node_selector: no node labelled role=server is free for host c (b holds host b)") {
		t.Errorf("got %v", err)
	}
}

// TestSummary: the lab's phase and ready count from its hosts' status,
// a status of an older plan counting for nothing.
func TestSummary(t *testing.T) {
	plan, err := PlanFile("k3.yaml", []byte(strings.Replace(lab3, "c: {node_selector: {role: server}}", "c: {underlay: 192.0.2.3}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hosts       map[string]HostStatus
		deleting    bool
		phase, want string
	}{
		{nil, false, Pending, "0/3"},
		{map[string]HostStatus{"a": {Phase: Deployed, PlanHash: plan.Hash}, "b": {Phase: Deployed, PlanHash: plan.Hash}, "c": {Phase: Deployed, PlanHash: "old"}}, false, Pending, "2/3"},
		{map[string]HostStatus{"a": {Phase: Deployed, PlanHash: plan.Hash}, "b": {Phase: Deployed, PlanHash: plan.Hash}, "c": {Phase: Deployed, PlanHash: plan.Hash}}, false, Deployed, "3/3"},
		{map[string]HostStatus{"a": {Phase: Deployed, PlanHash: plan.Hash}, "c": {Phase: Failed, PlanHash: plan.Hash}}, false, Failed, "1/3"},
		{map[string]HostStatus{"a": {Phase: Deployed, PlanHash: plan.Hash}}, true, Removing, "1/3"},
	} {
		lab := &Lab{Plan: plan, Status: Status{Hosts: c.hosts}, Deleting: c.deleting}
		if phase, ready := lab.Summary(); phase != c.phase || ready != c.want {
			t.Errorf("%+v: %s %s, want %s %s", c.hosts, phase, ready, c.phase, c.want)
		}
	}
}

// TestNewLabReadLab: a Lab made for a plan reads back with its plan,
// placement (the host's name when not placed) and a finalizer per host.
func TestNewLabReadLab(t *testing.T) {
	file := []byte(strings.Replace(lab3, "c: {node_selector: {role: server}}", "c: {underlay: 192.0.2.3}", 1))
	plan, err := PlanFile("k3.yaml", file)
	if err != nil {
		t.Fatal(err)
	}
	u, err := NewLab("ns1", plan, file, spec.FileSHA(file), Placement{"c": "m1"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ReadLab(u)
	if err != nil {
		t.Fatal(err)
	}
	if l.Plan.Hash != plan.Hash || l.NodeOf("a") != "a" || l.NodeOf("c") != "m1" || l.HostOn("m1") != "c" || l.HostOn("c") != "" || len(l.Finalizers) != 3 {
		t.Errorf("read back: %+v", l)
	}
	plan.Lab = "Not_A_Name"
	if _, err := NewLab("ns1", plan, file, spec.FileSHA(file), nil); err == nil || !strings.Contains(err.Error(), "cannot name a Kubernetes resource") {
		t.Errorf("a lab name Kubernetes refuses: %v", err)
	}
}
