package spec

import (
	"fmt"
	"strings"
)

// Endpoint names an interface of a node.
type Endpoint struct {
	Node      string `json:"node"`
	Interface string `json:"interface"`
}

func (e Endpoint) String() string {
	if e.Node == "" {
		return ""
	}
	if e.Interface == "" {
		return e.Node
	}
	return e.Node + ":" + e.Interface
}

// ParseEndpoint reads "node:interface", or "node" alone (Interface is then
// empty: callers that need an interface check it). It is the one reader of
// that notation, for the file (links, traffic) and the command line.
func ParseEndpoint(s string) (Endpoint, error) {
	node, iface, hasColon := strings.Cut(s, ":")
	switch {
	case node == "":
		return Endpoint{}, fmt.Errorf("%q must be node:interface, e.g. ns1:veth1", s)
	case hasColon && (iface == "" || strings.Contains(iface, ":")):
		return Endpoint{}, fmt.Errorf("%q must be node:interface, e.g. ns1:veth1", s)
	}
	return Endpoint{Node: node, Interface: iface}, nil
}

// ParseInterface is ParseEndpoint for places that need the interface.
func ParseInterface(s string) (Endpoint, error) {
	ep, err := ParseEndpoint(s)
	if err == nil && ep.Interface == "" {
		err = fmt.Errorf("%q must be node:interface, e.g. ns1:veth1", s)
	}
	return ep, err
}

// ParseInterfaces reads a comma-separated list of node:interface.
func ParseInterfaces(s string) ([]Endpoint, error) {
	var out []Endpoint
	for _, part := range strings.Split(s, ",") {
		ep, err := ParseInterface(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, ep)
	}
	return out, nil
}
