package kube

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/spec"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Nodes is the core API's Node resource.
var Nodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// Placement is the Kubernetes node of each host of a lab, by host.
type Placement map[string]string

// Place decides the node of each host of l: the node of the host's name,
// or for a host with node_selector: the first node by name with every
// label that holds no other host of the lab (two hosts on one node would
// share its address). A host without underlay: gets its node's
// InternalIP, returned in underlays for spec.WithUnderlays. The API
// server is asked only when a host has node_selector:.
func Place(ctx context.Context, client dynamic.Interface, l *spec.Lab) (Placement, map[string]netip.Addr, error) {
	p, underlays := Placement{}, map[string]netip.Addr{}
	taken := map[string]string{} // node -> host
	for _, h := range l.Hosts {
		if h.NodeSelector == nil {
			p[h.Name], taken[h.Name] = h.Name, h.Name
		}
	}
	for _, h := range l.Hosts {
		if h.NodeSelector == nil {
			continue
		}
		sel := labels.SelectorFromSet(h.NodeSelector).String()
		list, err := client.Resource(Nodes).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, nil, fmt.Errorf("hosts.%s.node_selector: list the nodes labelled %s: %w", h.Name, sel, err)
		}
		node, why := pick(list.Items, taken)
		if node == nil {
			return nil, nil, fmt.Errorf("hosts.%s.node_selector: no node labelled %s is free for host %s (%s): label another node, or change the selector", h.Name, sel, h.Name, why)
		}
		p[h.Name], taken[node.GetName()] = node.GetName(), h.Name
		if !h.Underlay.IsValid() {
			addr, ok := internalIP(node)
			if !ok {
				return nil, nil, fmt.Errorf("hosts.%s: node %s has no InternalIP address to be the host's underlay: give hosts.%s.underlay", h.Name, node.GetName(), h.Name)
			}
			underlays[h.Name] = addr
		}
	}
	return p, underlays, nil
}

// pick is the first node by name that holds no host yet, or nil and
// what the nodes that matched hold.
func pick(nodes []unstructured.Unstructured, taken map[string]string) (*unstructured.Unstructured, string) {
	slices.SortFunc(nodes, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	var held []string
	for i := range nodes {
		if host, ok := taken[nodes[i].GetName()]; ok {
			held = append(held, fmt.Sprintf("%s holds host %s", nodes[i].GetName(), host))
			continue
		}
		return &nodes[i], ""
	}
	if len(held) == 0 {
		return nil, "none has those labels"
	}
	return nil, strings.Join(held, ", ")
}

// internalIP is the node's first InternalIP address in its status.
func internalIP(node *unstructured.Unstructured) (netip.Addr, bool) {
	addrs, _, _ := unstructured.NestedSlice(node.Object, "status", "addresses")
	for _, a := range addrs {
		m, _ := a.(map[string]any)
		if m["type"] != "InternalIP" {
			continue
		}
		if s, _ := m["address"].(string); s != "" {
			if addr, err := netip.ParseAddr(s); err == nil {
				return addr, true
			}
		}
	}
	return netip.Addr{}, false
}

// HostOn is the host of the lab placed on node, "" when none is.
func (l *Lab) HostOn(node string) string {
	for _, h := range l.Plan.Hosts() {
		if l.NodeOf(h) == node {
			return h
		}
	}
	return ""
}

// NodeOf is the node host is placed on: the Lab's placement, or the node
// of the host's name.
func (l *Lab) NodeOf(host string) string {
	if n := l.Placement[host]; n != "" {
		return n
	}
	return host
}
