package spec

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// PortVLANs are the 802.1Q VLANs a port of a VLAN-filtering bridge is a
// member of: Tagged leave it tagged; PVID (0: none) is the VLAN its
// untagged frames belong to, and leaves it untagged. A port the file
// lists is a member of these alone (not of the kernel's default VLAN 1).
type PortVLANs struct {
	Port   string
	Tagged []int
	PVID   int
}

// Member reports whether the port is a member of VLAN vid.
func (p PortVLANs) Member(vid int) bool { return p.PVID == vid || slices.Contains(p.Tagged, vid) }

// DefaultPVID is the VLAN the kernel puts every port of a VLAN-filtering
// bridge in (untagged) when nothing else is said, and the bridge itself.
const DefaultPVID = 1

// PortVLAN returns the VLANs of port p of bridge b: as the file lists them,
// or the kernel's default (VLAN 1, untagged).
func (b *Bridge) PortVLAN(p string) PortVLANs {
	for _, v := range b.VLANs {
		if v.Port == p {
			return v
		}
	}
	return PortVLANs{Port: p, PVID: DefaultPVID}
}

// parseBridgeVLANs reads a bridge's vlans: {PORT: [VID, ...] | {tagged: [VID, ...], pvid: VID}}.
func (r *reporter) parseBridgeVLANs(e kv) []PortVLANs {
	var out []PortVLANs
	for _, pe := range r.entries(e.v, e.path, "port: [10, 20] or port: {pvid: 10}") {
		path := e.path + "." + pe.key
		r.at(path, pe.k.Line, pe.k.Column)
		pv := PortVLANs{Port: pe.key}
		switch pe.v.Kind {
		case yaml.SequenceNode:
			pv.Tagged = r.vids(pe.v, path)
		case yaml.MappingNode:
			f := r.fields(pe.v, path, "a port's VLANs", keysOf(portVLANsDef)...)
			if te, ok := f["tagged"]; ok {
				pv.Tagged = r.vids(te.v, te.path)
			}
			if pe, ok := f["pvid"]; ok {
				pv.PVID, _ = r.integer(pe.v, pe.path, "the VLAN of the port's untagged frames", 1, 4094)
			}
		default:
			r.errf(path, "want the port's tagged VLANs, e.g. [10, 20], or {tagged: [20], pvid: 10}, not %s", describe(pe.v))
			continue
		}
		if len(pe.v.Content) == 0 {
			r.errf(path, "port %s is in no VLAN: give its VLANs, or remove the entry", pv.Port)
		}
		out = append(out, pv)
	}
	return out
}

func (r *reporter) vids(v *yaml.Node, path string) []int {
	items, _ := r.list(v, path, "[10, 20]")
	var out []int
	for i, item := range items {
		if id, ok := r.integer(item, fmt.Sprintf("%s[%d]", path, i), "a VLAN ID", 1, 4094); ok {
			out = append(out, id)
		}
	}
	return out
}

// validateBridgeVLANs checks that vlans: names ports of a filtering bridge.
func validateBridgeVLANs(r *reporter, n *Node, b *Bridge) {
	path := fmt.Sprintf("nodes.%s.bridges.%s", n.Name, b.Name)
	if len(b.VLANs) > 0 && !b.VLANFiltering {
		r.errf(path+".vlans", "a bridge forwards by VLAN only with vlan_filtering: true: add it, or remove vlans")
	}
	for _, v := range b.VLANs {
		if !slices.Contains(b.Ports, v.Port) {
			r.errf(path+".vlans."+v.Port, "%s is not a port of bridge %s: list it under ports, or fix the name", v.Port, b.Name)
		}
	}
}
