// Package kube runs a lab that spans hosts on Kubernetes: the coordinator
// places each host of the lab on a node (by the host's name, or by its
// node_selector: labels), writes the lab's file, its plan and the
// placement into a Lab resource, and an agent on each Kubernetes node (a
// DaemonSet, deploy/kubernetes/) builds the share placed on its node and
// writes its status there. Deleting the resource has every agent remove its share
// first (one finalizer per host).
//
// It uses client-go's dynamic client on the resource as unstructured
// JSON: the Lab is one small type, and generated typed clients would
// bring code generation into the build for no check the API server does
// not already make against the CRD's schema.
package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/spec"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labs is the Lab resource (deploy/kubernetes/crd.yaml).
var Labs = schema.GroupVersionResource{Group: "nslab.dev", Version: "v1alpha1", Resource: "labs"}

// The phases of a host's share, and of the whole lab, in its status.
const (
	Deployed = "Deployed"
	Failed   = "Failed"
	Removing = "Removing"
	Pending  = "Pending"
)

// Finalizer is host's mark on a Lab: the API server keeps a deleted Lab
// until host's agent has removed its share and taken its mark off.
func Finalizer(host string) string { return "nslab.dev/host-" + host }

// HostStatus is one host's share as its agent last wrote it.
type HostStatus struct {
	Phase    string `json:"phase"`
	Node     string `json:"node,omitempty"` // the Kubernetes node it is on
	PlanHash string `json:"planHash,omitempty"`
	Nodes    int    `json:"nodes,omitempty"`
	Message  string `json:"message,omitempty"`
	Updated  string `json:"updated,omitempty"` // RFC 3339, the agent's clock
}

// Status is a Lab's status: each host's, and the lab's phase and how
// many hosts are deployed with the lab's plan ("2/3", for kubectl get).
type Status struct {
	Phase   string                `json:"phase"`
	Ready   string                `json:"ready"`
	Message string                `json:"message,omitempty"` // why the Lab cannot be read (Invalid)
	Hosts   map[string]HostStatus `json:"hosts,omitempty"`
}

// Lab is what nslab reads from a Lab resource.
type Lab struct {
	Namespace, Name string
	UID             string // this Lab's, not another's made later with its name
	File            []byte
	// Source is the SHA-256 (hex) of the file as the user gave it, before
	// placement wrote the nodes' addresses into File ("": a Lab made
	// before nslab wrote it).
	Source     string
	Plan       *fleet.Plan
	Placement  Placement
	Status     Status
	Deleting   bool
	Finalizers []string
}

// NewLab is the Lab resource for plan, in namespace, with the file the
// plan was computed from, the SHA-256 of the file the user gave (source,
// spec.FileSHA), the node of each host, a finalizer for each host, and no
// status.
func NewLab(namespace string, plan *fleet.Plan, file []byte, source string, placement Placement) (*unstructured.Unstructured, error) {
	if errs := validation.IsDNS1123Subdomain(plan.Lab); len(errs) > 0 {
		return nil, fmt.Errorf("lab name %q cannot name a Kubernetes resource (%s): give the lab a name of lower-case letters, digits and '-'", plan.Lab, strings.Join(errs, "; "))
	}
	p, err := toMap(plan)
	if err != nil {
		return nil, err
	}
	placed := map[string]any{}
	for _, h := range plan.Hosts() {
		placed[h] = h
		if n := placement[h]; n != "" {
			placed[h] = n
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Labs.GroupVersion().String(),
		"kind":       "Lab",
		"metadata":   map[string]any{"name": plan.Lab, "namespace": namespace},
		"spec":       map[string]any{"file": string(file), "source": source, "plan": p, "hosts": int64(len(plan.Shares)), "placement": placed},
	}}
	var fin []string
	for _, h := range plan.Hosts() {
		fin = append(fin, Finalizer(h))
	}
	u.SetFinalizers(fin)
	return u, nil
}

// ReadLab reads a Lab resource, checking that its plan is the one its
// file gives.
func ReadLab(u *unstructured.Unstructured) (*Lab, error) {
	l := &Lab{Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), Deleting: u.GetDeletionTimestamp() != nil, Finalizers: u.GetFinalizers()}
	where := fmt.Sprintf("Lab %s/%s", l.Namespace, l.Name)
	file, _, _ := unstructured.NestedString(u.Object, "spec", "file")
	l.File = []byte(file)
	l.Source, _, _ = unstructured.NestedString(u.Object, "spec", "source")
	raw, ok, _ := unstructured.NestedMap(u.Object, "spec", "plan")
	if !ok {
		return nil, fmt.Errorf("%s: spec.plan is missing: create Labs with nslab's deploy on Kubernetes, which computes it", where)
	}
	if err := fromMap(raw, &l.Plan); err != nil {
		return nil, fmt.Errorf("%s: spec.plan: %w", where, err)
	}
	l.Placement, _, _ = unstructured.NestedStringMap(u.Object, "spec", "placement")
	if st, ok, _ := unstructured.NestedMap(u.Object, "status"); ok {
		if err := fromMap(st, &l.Status); err != nil {
			return nil, fmt.Errorf("%s: status: %w", where, err)
		}
	}
	return l, nil
}

// Summary is the lab's phase and ready count from its hosts' status:
// Deployed when every host is deployed with the lab's plan, Failed when
// one failed with it, Drifted when none failed and one's share is no
// longer what the plan built, Removing while it is deleted, Pending
// otherwise.
func (l *Lab) Summary() (phase, ready string) {
	n, drifted := 0, false
	phase = Pending
	for _, h := range l.Plan.Hosts() {
		st := l.Status.Hosts[h]
		switch {
		case st.PlanHash != l.Plan.Hash:
		case st.Phase == Deployed:
			n++
		case st.Phase == Failed:
			phase = Failed
		case st.Phase == Drifted:
			drifted = true
		}
	}
	switch {
	case l.Deleting:
		phase = Removing
	case phase != Failed && drifted:
		phase = Drifted
	case phase != Failed && n == len(l.Plan.Shares):
		phase = Deployed
	}
	return phase, fmt.Sprintf("%d/%d", n, len(l.Plan.Shares))
}

// FailedHosts are the hosts whose share failed with the lab's plan, in
// the plan's order.
func (l *Lab) FailedHosts() []string {
	var out []string
	for _, h := range l.Plan.Hosts() {
		if st := l.Status.Hosts[h]; st.PlanHash == l.Plan.Hash && st.Phase == Failed {
			out = append(out, h)
		}
	}
	return out
}

// PlanFile computes the plan of a lab's file, as the coordinator does.
func PlanFile(path string, file []byte) (*fleet.Plan, error) {
	l, err := spec.Parse(path, file)
	if err != nil {
		return nil, err
	}
	return fleet.NewPlan(file, l)
}

// withoutFinalizer is fins less f.
func withoutFinalizer(fins []string, f string) []string {
	return slices.DeleteFunc(slices.Clone(fins), func(s string) bool { return s == f })
}

func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

func fromMap(m map[string]any, v any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Owner is who a node's share of this Lab is deployed for, as nslab's
// hidden --owner records it: the Lab's namespace, name and UID, so that a
// Lab of the same name in another namespace, or made again later, never
// removes or changes this one's share.
func (l *Lab) Owner() string {
	return fmt.Sprintf("Kubernetes Lab %s/%s (uid %s)", l.Namespace, l.Name, l.UID)
}
