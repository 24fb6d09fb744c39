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

// AddressOwners maps every address of the lab to its interface or bridge.
func (l *Lab) AddressOwners() map[netip.Addr]Endpoint {
	m := map[netip.Addr]Endpoint{}
	for _, o := range l.Addresses() {
		m[o.Addr] = o.By
	}
	return m
}

// Addresses lists every address of the lab with the interface or bridge
// that holds it, in file order.
func (l *Lab) Addresses() []Owned {
	var out []Owned
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			for _, a := range i.Addresses {
				out = append(out, Owned{Addr: a.Addr(), By: Endpoint{n.Name, i.Name}})
			}
		}
		for _, b := range n.Bridges {
			for _, a := range b.Addresses {
				out = append(out, Owned{Addr: a.Addr(), By: Endpoint{n.Name, b.Name}})
			}
		}
	}
	return out
}

// Owned is an address and the interface that holds it.
type Owned struct {
	Addr netip.Addr `json:"addr"`
	By   Endpoint   `json:"by"`
}
