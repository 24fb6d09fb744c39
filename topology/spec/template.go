package spec

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"text/template"
)

// TemplateNode is what a node's templates see (files:, frr.config,
// bird.config): {{.Name}}, {{.Hostname}}, {{.Lab}}, {{.Vars.asn}} (the
// lab's vars: with the node's over them), {{range .Interfaces}} with each
// one's {{.Name}}, {{.Addresses}} and {{.Peer}} (the node and interface
// at the other end of its link, and their addresses), {{.RouterID}},
// {{(.Interface "eth1").Address}} and {{(.Interface "eth1").Peer.Address.IP}}.
type TemplateNode struct {
	Name       string
	Hostname   string
	Lab        string
	Vars       map[string]any
	Interfaces []TemplateInterface
}

// TemplateInterface is one interface of a node, for templates.
type TemplateInterface struct {
	Name      string
	Addresses []Address
	Peer      *TemplatePeer // nil: no link (lo, a made interface)
}

// TemplatePeer is the other end of an interface's link.
type TemplatePeer struct {
	Node      string
	Interface string
	Addresses []Address
}

// Address is an interface address with its prefix length: {{.}} prints
// 10.0.1.1/24, {{.IP}} 10.0.1.1, {{.Network}} 10.0.1.0/24, {{.Bits}} 24.
type Address struct{ netip.Prefix }

// IP is the address without its prefix length.
func (a Address) IP() string { return a.Addr().String() }

// Network is the prefix the address is in (10.0.1.0/24).
func (a Address) Network() string { return a.Masked().String() }

// Is4 reports whether it is an IPv4 address.
func (a Address) Is4() bool { return a.Addr().Is4() }

// Address is the interface's first address (an error when it has none).
func (i TemplateInterface) Address() (Address, error) {
	if len(i.Addresses) == 0 {
		return Address{}, fmt.Errorf("interface %s has no address", i.Name)
	}
	return i.Addresses[0], nil
}

// Address is the peer interface's first address (an error when it has none).
func (p *TemplatePeer) Address() (Address, error) {
	if p == nil || len(p.Addresses) == 0 {
		return Address{}, errors.New("the peer has no address")
	}
	return p.Addresses[0], nil
}

// Interface is the node's interface name (an error when it has none).
func (t *TemplateNode) Interface(name string) (TemplateInterface, error) {
	for _, i := range t.Interfaces {
		if i.Name == name {
			return i, nil
		}
	}
	return TemplateInterface{}, fmt.Errorf("node %s has no interface %s", t.Name, name)
}

// RouterID is the node's router ID: the first IPv4 address of its lo
// other than 127/8, else the highest IPv4 address of its interfaces (as
// FRR and BIRD pick one when none is given, but fixed by the file, not
// by the order interfaces come up in).
func (t *TemplateNode) RouterID() (string, error) {
	var best netip.Addr
	for _, i := range t.Interfaces {
		for _, a := range i.Addresses {
			ip := a.Addr()
			if !ip.Is4() || ip.IsLoopback() {
				continue
			}
			if i.Name == "lo" {
				return ip.String(), nil
			}
			if !best.IsValid() || best.Less(ip) {
				best = ip
			}
		}
	}
	if !best.IsValid() {
		return "", errors.New("node " + t.Name + " has no IPv4 address to take a router ID from: give lo an address, or write the router ID")
	}
	return best.String(), nil
}

// newTemplateNode is node n of lab as its templates see it.
func newTemplateNode(lab *Lab, n *Node) *TemplateNode {
	t := &TemplateNode{Name: n.Name, Hostname: n.HostnameOrName(), Lab: lab.Name, Vars: map[string]any{}}
	maps.Copy(t.Vars, lab.Vars)
	maps.Copy(t.Vars, n.Vars)
	for _, i := range n.Interfaces {
		ti := TemplateInterface{Name: i.Name, Addresses: addresses(i.Addresses)}
		if i.Peer.Node != "" {
			p := &TemplatePeer{Node: i.Peer.Node, Interface: i.Peer.Interface}
			if pn := lab.Node(i.Peer.Node); pn != nil {
				if pi := pn.Interface(i.Peer.Interface); pi != nil {
					p.Addresses = addresses(pi.Addresses)
				}
			}
			ti.Peer = p
		}
		t.Interfaces = append(t.Interfaces, ti)
	}
	for _, b := range n.Bridges {
		t.Interfaces = append(t.Interfaces, TemplateInterface{Name: b.Name, Addresses: addresses(b.Addresses)})
	}
	return t
}

func addresses(ps []netip.Prefix) []Address {
	out := make([]Address, len(ps))
	for k, p := range ps {
		out[k] = Address{p}
	}
	return out
}

// render executes text as a template over t. A missing key of .Vars is
// an error, not "<no value>".
func (t *TemplateNode) render(text string) (string, error) {
	tm, err := template.New(t.Name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tm.Execute(&b, t); err != nil {
		return "", err
	}
	return b.String(), nil
}

// HostnameOrName is the node's host name: hostname:, or its name.
func (n *Node) HostnameOrName() string {
	if n.Hostname != "" {
		return n.Hostname
	}
	return n.Name
}
