package spec

import "net/netip"

// Flow is what a traced packet is, for the NAT and firewall rules on its
// way: its protocol and destination port, and whether it answers a
// packet that went the other way (conntrack's established: no NAT rule
// applies to it, and the nodes that rewrote the request's source give it
// its destination back, listed in Restore by node).
type Flow struct {
	Proto   string // tcp, udp, icmp; "": an ICMP echo (icmpv6 for IPv6)
	Port    int    // destination port for tcp and udp
	Reply   bool
	Restore map[string]netip.Addr
}

// Packet is the packet a flow starts as, from src to dst.
func (f Flow) Packet(src, dst netip.Addr) Packet {
	p := Packet{Src: src, Dst: dst, Proto: f.Proto, Port: f.Port, State: "new"}
	if p.Proto == "" || p.Proto == "icmp" {
		p.Proto, p.Port = "icmp", 0
		if dst.Is6() {
			p.Proto = "icmpv6"
		}
	}
	if f.Reply {
		p.State = "established"
	}
	return p
}

// AddressOwners maps every address of the lab to its interface or bridge,
// IPv6 link-local ones included (a link-local next hop is one of them; a
// deployed lab's kernels give every interface one).
func (l *Lab) AddressOwners() map[netip.Addr]Endpoint {
	m := map[netip.Addr]Endpoint{}
	for _, o := range l.owned(true) {
		m[o.Addr] = o.By
	}
	return m
}

// Addresses lists every address of the lab but IPv6 link-local ones, with
// the interface or bridge that holds it, in file order: the file's, or a
// deployed lab's kernels' once read (see Interface.Addrs).
func (l *Lab) Addresses() []Owned { return l.owned(false) }

func (l *Lab) owned(linkLocal bool) []Owned {
	var out []Owned
	add := func(node, dev string, ps []netip.Prefix) {
		for _, a := range ps {
			if linkLocal || !a.Addr().Is6() || !a.Addr().IsLinkLocalUnicast() {
				out = append(out, Owned{Addr: a.Addr(), By: Endpoint{node, dev}})
			}
		}
	}
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			add(n.Name, i.Name, i.Addrs())
		}
		for _, b := range n.Bridges {
			add(n.Name, b.Name, b.Addrs())
		}
	}
	return out
}

// Owned is an address and the interface that holds it.
type Owned struct {
	Addr netip.Addr `json:"addr"`
	By   Endpoint   `json:"by"`
}
