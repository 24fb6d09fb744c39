package spec

import (
	"crypto/sha256"
	"net"
)

// assignMACs gives every veth end without a mac: in the file a MAC derived
// from the lab, node and interface names (locally administered, unicast).
// The same file therefore always builds the same MACs: a path or a dry-run
// script printed before deploying names the MACs the kernel will show, a
// redeployed lab needs no new ARP entries in anyone's notes, and reports of
// two runs compare. Bridges keep the kernel's choice (the lowest port MAC,
// itself derived), VFs keep the NIC's; made interfaces: see derivesMAC. A derived MAC never repeats one the
// file declares.
func assignMACs(lab *Lab) {
	used := map[string]bool{}
	for _, n := range lab.Nodes {
		for _, i := range n.Interfaces {
			if i.MAC != nil {
				used[i.MAC.String()] = true
			}
		}
		for _, b := range n.Bridges {
			if b.MAC != nil {
				used[b.MAC.String()] = true
			}
		}
	}
	derive := func(ep Endpoint, i *Interface) {
		if i.MAC != nil {
			return
		}
		for salt := byte(0); ; salt++ {
			mac := DerivedMAC(lab.Name, ep, salt)
			if !used[mac.String()] {
				i.MAC, i.MACDerived = mac, true
				used[mac.String()] = true
				return
			}
		}
	}
	for _, l := range lab.Links {
		for _, ep := range []Endpoint{l.A, l.B} {
			derive(ep, lab.Node(ep.Node).Interface(ep.Interface))
		}
	}
	for _, n := range lab.Nodes {
		for _, i := range n.Interfaces {
			if derivesMAC(i) {
				derive(Endpoint{n.Name, i.Name}, i)
			}
		}
	}
}

// derivesMAC reports whether a made interface gets a derived MAC: a macvlan
// (but passthru, which takes its parent's) and a VRF would get a random one
// from the kernel; a VLAN keeps its parent's and a bond its first port's.
func derivesMAC(i *Interface) bool {
	switch i.Kind {
	case KindMacvlan:
		return i.Macvlan.Mode != "passthru"
	case KindVRF:
		return true
	case KindVeth, KindLoopback, KindVF, KindVLAN, KindBond:
	}
	return false
}

// DerivedMAC is the MAC nslab gives interface ep of lab when the file names
// none: the first 6 bytes of SHA-256("nslab" lab node interface salt), made
// locally administered and unicast.
func DerivedMAC(lab string, ep Endpoint, salt byte) net.HardwareAddr {
	h := sha256.New()
	for _, s := range []string{"nslab", lab, ep.Node, ep.Interface} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write([]byte{salt})
	sum := h.Sum(nil)
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&^0x01 | 0x02
	return mac
}
