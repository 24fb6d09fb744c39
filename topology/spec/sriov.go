package spec

import (
	"fmt"
	"net"

	"gopkg.in/yaml.v3"
)

// PF is an SR-IOV physical function of the host whose VFs the lab hands
// to nodes:
//
//	sriov:
//	  - pf: ens4f0np0
//	    numvfs: 2
//	    vfs:
//	      - {index: 0, node: ns1, name: vf0, mac: "ea:0c:48:be:43:09", vlan: 0, trust: false, spoofchk: true}
//	      - {index: 1, node: ns2, name: vf1}
type PF struct {
	Name   string
	NumVFs int
	VFs    []*VF
}

// VF is one virtual function handed to a node, with the settings the PF
// applies to it. Nil or zero fields are left as they are.
type VF struct {
	Index     int
	Node      string
	Name      string // its name inside the node
	MAC       net.HardwareAddr
	VLAN      *int
	QoS       int
	Trust     *bool
	SpoofChk  *bool
	LinkState string // "", auto, enable, disable
	MinTxRate int    // Mb/s
	MaxTxRate int    // Mb/s
}

var pfKeys = keysOf(pfDef)
var vfKeys = keysOf(vfDef)

func (r *reporter) parsePF(v *yaml.Node, path string) *PF {
	r.at(path, v.Line, v.Column)
	if v.Kind != yaml.MappingNode {
		r.errf(path, "an SR-IOV entry must be a mapping such as {pf: ens4f0np0, numvfs: 2, vfs: [...]}, not %s", describe(v))
		return nil
	}
	f := r.fields(v, path, "an SR-IOV entry", pfKeys...)
	pf := &PF{}
	if e, ok := f["pf"]; ok {
		pf.Name, _ = r.str(e.v, e.path, "the physical function's interface name")
	} else {
		r.errf(path, "missing pf: (the physical function, e.g. ens4f0np0)")
	}
	if e, ok := f["numvfs"]; ok {
		pf.NumVFs, _ = r.integer(e.v, e.path, "the number of VFs", 1, 4096)
	} else {
		r.errf(path, "missing numvfs: (how many VFs the PF must have)")
	}
	if e, ok := f["vfs"]; ok {
		items, _ := r.list(e.v, e.path, "[{index: 0, node: ns1, name: vf0}]")
		for i, item := range items {
			if vf := r.parseVF(item, fmt.Sprintf("%s[%d]", e.path, i)); vf != nil {
				pf.VFs = append(pf.VFs, vf)
			}
		}
	}
	return pf
}

func (r *reporter) parseVF(v *yaml.Node, path string) *VF {
	r.at(path, v.Line, v.Column)
	if v.Kind != yaml.MappingNode {
		r.errf(path, "a VF must be a mapping such as {index: 0, node: ns1, name: vf0}, not %s", describe(v))
		return nil
	}
	f := r.fields(v, path, "a VF", vfKeys...)
	vf := &VF{Index: -1}
	if e, ok := f["index"]; ok {
		vf.Index, _ = r.integer(e.v, e.path, "the VF index", 0, 4095)
	} else {
		r.errf(path, "missing index: (the VF number on the PF, from 0)")
	}
	if e, ok := f["node"]; ok {
		vf.Node, _ = r.str(e.v, e.path, "a node name")
	} else {
		r.errf(path, "missing node: (the node the VF is handed to)")
	}
	if e, ok := f["name"]; ok {
		vf.Name, _ = r.str(e.v, e.path, "an interface name")
	} else if vf.Index >= 0 {
		vf.Name = fmt.Sprintf("vf%d", vf.Index)
	}
	r.parseVFSettings(f, vf)
	return vf
}

// parseVFSettings reads the PF-side settings of a VF.
func (r *reporter) parseVFSettings(f map[string]kv, vf *VF) {
	if e, ok := f["mac"]; ok {
		if s, ok := r.str(e.v, e.path, "a MAC address"); ok {
			m, err := net.ParseMAC(s)
			if err != nil || len(m) != 6 || m[0]&1 == 1 {
				r.errf(e.path, "invalid VF MAC %q: want a unicast MAC such as \"02:00:00:00:01:01\"", s)
			}
			vf.MAC = m
		}
	}
	if e, ok := f["vlan"]; ok {
		if n, ok := r.integer(e.v, e.path, "the VLAN id (0: none)", 0, 4095); ok {
			vf.VLAN = &n
		}
	}
	if e, ok := f["qos"]; ok {
		vf.QoS, _ = r.integer(e.v, e.path, "the VLAN priority", 0, 7)
	}
	for _, k := range []string{"trust", "spoofchk"} {
		if e, ok := f[k]; ok {
			if b, ok := r.boolean(e.v, e.path, k); ok {
				if k == "trust" {
					vf.Trust = &b
				} else {
					vf.SpoofChk = &b
				}
			}
		}
	}
	if e, ok := f["link_state"]; ok {
		if s, ok := r.str(e.v, e.path, "auto, enable or disable"); ok {
			vf.LinkState = s
			if s != "auto" && s != "enable" && s != "disable" {
				r.errf(e.path, "link_state %q: use auto, enable or disable", s)
			}
		}
	}
	if e, ok := f["min_tx_rate"]; ok {
		vf.MinTxRate, _ = r.integer(e.v, e.path, "the minimum tx rate in Mb/s", 0, 1<<30)
	}
	if e, ok := f["max_tx_rate"]; ok {
		vf.MaxTxRate, _ = r.integer(e.v, e.path, "the maximum tx rate in Mb/s", 0, 1<<30)
	}
}

// validateSRIOV checks the SR-IOV section against itself and the nodes:
// indexes unique and below numvfs, nodes defined, names free. Whether the
// PF exists and how many VFs it supports is checked before deploy, on the
// machine.
func validateSRIOV(r *reporter, lab *Lab, nodes map[string]*Node) {
	pfs := map[string]int{}
	names := map[Endpoint]string{}
	for k, pf := range lab.SRIOV {
		path := fmt.Sprintf("sriov[%d]", k)
		if pf.Name != "" {
			checkIfName(r, path+".pf", pf.Name)
			if first, dup := pfs[pf.Name]; dup {
				r.errf(path+".pf", "PF %s is already listed at sriov[%d]", pf.Name, first)
			}
			pfs[pf.Name] = k
		}
		idx := map[int]int{}
		for i, vf := range pf.VFs {
			vpath := fmt.Sprintf("%s.vfs[%d]", path, i)
			validateVFIndex(r, vpath, pf, vf, i, idx)
			n := nodes[vf.Node]
			if vf.Node != "" && n == nil {
				r.errf(vpath+".node", "node %q is not defined: define it under nodes:", vf.Node)
				continue
			}
			if n != nil && vf.Name != "" {
				validateVFName(r, vpath, pf, vf, n, names)
			}
		}
	}
}

// validateVFIndex checks that a VF's index is given out once and exists.
func validateVFIndex(r *reporter, vpath string, pf *PF, vf *VF, i int, idx map[int]int) {
	if vf.Index < 0 {
		return
	}
	if first, dup := idx[vf.Index]; dup {
		r.errf(vpath+".index", "VF %d of %s is already handed out at vfs[%d]", vf.Index, pf.Name, first)
	}
	idx[vf.Index] = i
	if pf.NumVFs > 0 && vf.Index >= pf.NumVFs {
		r.errf(vpath+".index", "VF %d is beyond numvfs %d (VFs are numbered from 0): raise numvfs or fix the index", vf.Index, pf.NumVFs)
	}
}

// validateVFName checks a VF's name in its node, and its rates.
func validateVFName(r *reporter, vpath string, pf *PF, vf *VF, n *Node, names map[Endpoint]string) {
	checkIfName(r, vpath+".name", vf.Name)
	ep := Endpoint{vf.Node, vf.Name}
	if other, dup := names[ep]; dup {
		r.errf(vpath+".name", "%s is already the name of %s", ep, other)
	}
	names[ep] = fmt.Sprintf("%s VF %d", pf.Name, vf.Index)
	if i := n.Interface(vf.Name); i != nil && i.Peer.Node != "" {
		r.errf(vpath+".name", "%s is a veth end of a link: a VF needs a name of its own in node %s", ep, vf.Node)
	}
	if n.Bridge(vf.Name) != nil || vf.Name == "lo" {
		r.errf(vpath+".name", "%s is taken in node %s: choose another name", vf.Name, vf.Node)
	}
	if vf.MinTxRate > 0 && vf.MaxTxRate > 0 && vf.MinTxRate > vf.MaxTxRate {
		r.errf(vpath, "min_tx_rate %d is above max_tx_rate %d", vf.MinTxRate, vf.MaxTxRate)
	}
}

// VFOf returns the VF handed to node under name, with its PF, or nil.
func (l *Lab) VFOf(node, name string) (*PF, *VF) {
	for _, pf := range l.SRIOV {
		for _, vf := range pf.VFs {
			if vf.Node == node && vf.Name == name {
				return pf, vf
			}
		}
	}
	return nil, nil
}
