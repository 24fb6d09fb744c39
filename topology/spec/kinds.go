package spec

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Kind is what a node's interface is. Code that treats kinds differently
// switches over every Kind (the exhaustive linter of make lint checks it),
// so that adding a kind makes the linter name each place to extend.
type Kind int

const (
	// KindVeth is an end of a links: entry: a veth pair, or on a link
	// between two hosts a VXLAN interface (Link.VNI).
	KindVeth Kind = iota
	// KindLoopback is the node's lo (addresses only).
	KindLoopback
	// KindVF is an SR-IOV VF handed to the node (see Lab.SRIOV).
	KindVF
	// KindMacvlan is a macvlan over another interface of the node
	// (Interface.Macvlan).
	KindMacvlan
	// KindVLAN is an 802.1Q sub-interface of another interface of the
	// node (Interface.VLAN).
	KindVLAN
	// KindBond is a bond of interfaces of the node (Interface.Bond).
	KindBond
	// KindVRF is a VRF device with interfaces of the node enslaved
	// (Interface.VRF).
	KindVRF
)

func (k Kind) String() string {
	switch k {
	case KindVeth:
		return "veth"
	case KindLoopback:
		return "loopback"
	case KindVF:
		return "vf"
	case KindMacvlan:
		return "macvlan"
	case KindVLAN:
		return "vlan"
	case KindBond:
		return "bond"
	case KindVRF:
		return "vrf"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Made reports whether nslab creates an interface of this kind inside the
// node itself, over or around other interfaces of the node (macvlan,
// VLAN, bond, VRF), rather than as a link end or a handed-over device.
func (k Kind) Made() bool {
	switch k {
	case KindMacvlan, KindVLAN, KindBond, KindVRF:
		return true
	case KindVeth, KindLoopback, KindVF:
		return false
	}
	return false
}

// Macvlan is a macvlan interface over Parent, an interface of the same node.
type Macvlan struct {
	Parent string
	Mode   string // one of MacvlanModes; bridge when the file names none
}

// MacvlanModes are the macvlan modes a file may name.
var MacvlanModes = []string{"bridge", "private", "vepa", "passthru"}

// VLAN is an 802.1Q sub-interface of Parent, an interface of the same node.
type VLAN struct {
	Parent string
	ID     int // 1..4094
}

// Bond is a bond of Ports, interfaces of the same node.
type Bond struct {
	Ports []string
	Mode  string // one of BondModes; the kernel's balance-rr when the file names none
	// MIIMon is the link monitoring interval in milliseconds (miimon); a
	// port that goes down is taken out of the bond only with monitoring on.
	MIIMon int
}

// BondModes are the bonding modes a file may name, as the kernel names them.
var BondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// DefaultMIIMon is the link monitoring interval a bond gets when the file
// names none: the 100 ms the kernel's bonding documentation suggests (the
// kernel's own default, 0, never notices a port going down).
const DefaultMIIMon = 100

// VRFUnreachableMetric is the metric of the unreachable default route
// nslab puts in every VRF's table, as the kernel's VRF documentation
// advises: without it, a lookup that finds no route in the VRF's table
// goes on to the main table, and the VRF does not isolate.
const VRFUnreachableMetric = 4278198272

// VRF is a VRF device whose routing table is Table, with Ports (interfaces
// of the same node) enslaved; the table ends in an unreachable default
// (see VRFUnreachableMetric).
type VRF struct {
	Table int
	Ports []string
}

// Lower returns the interfaces of the node an interface is made over or
// of: a macvlan's or VLAN's parent, a bond's or VRF's ports.
func (i *Interface) Lower() []string {
	switch i.Kind {
	case KindMacvlan:
		return []string{i.Macvlan.Parent}
	case KindVLAN:
		return []string{i.VLAN.Parent}
	case KindBond:
		return i.Bond.Ports
	case KindVRF:
		return i.VRF.Ports
	case KindVeth, KindLoopback, KindVF:
	}
	return nil
}

// MadeInOrder returns the node's made interfaces (see Kind.Made) so that
// each comes after every interface it is made over: the order a deploy
// creates them in. Validation has refused cycles.
func (n *Node) MadeInOrder() []*Interface {
	var out []*Interface
	done := map[string]bool{}
	var visit func(i *Interface, depth int)
	visit = func(i *Interface, depth int) {
		if done[i.Name] || depth > len(n.Interfaces) {
			return
		}
		for _, lo := range i.Lower() {
			if l := n.Interface(lo); l != nil && l.Kind.Made() {
				visit(l, depth+1)
			}
		}
		if !done[i.Name] {
			done[i.Name] = true
			out = append(out, i)
		}
	}
	for _, i := range n.Interfaces {
		if i.Kind.Made() {
			visit(i, 0)
		}
	}
	return out
}

// kindKeys are the interface keys that make an interface of a made kind.
var kindKeys = map[string]Kind{"macvlan": KindMacvlan, "vlan": KindVLAN, "bond": KindBond, "vrf": KindVRF}

// parseKind reads the one kind key an interface entry may carry.
func (r *reporter) parseKind(i *Interface, f map[string]kv, path string) {
	var seen []string
	for key := range kindKeys {
		if _, ok := f[key]; ok {
			seen = append(seen, key)
		}
	}
	slices.Sort(seen)
	if len(seen) > 1 {
		r.errf(path, "an interface is one kind: it has %s; keep one", strings.Join(seen, " and "))
		return
	}
	if len(seen) == 0 {
		return
	}
	e := f[seen[0]]
	i.Kind = kindKeys[seen[0]]
	switch i.Kind {
	case KindMacvlan:
		i.Macvlan = r.parseMacvlan(e)
	case KindVLAN:
		i.VLAN = r.parseVLAN(e)
	case KindBond:
		i.Bond = r.parseBond(e)
	case KindVRF:
		i.VRF = r.parseVRF(e)
	case KindVeth, KindLoopback, KindVF:
	}
}

func (r *reporter) parseMacvlan(e kv) *Macvlan {
	m := &Macvlan{Mode: "bridge"}
	f := r.fields(e.v, e.path, "a macvlan", keysOf(macvlanDef)...)
	m.Parent = r.required(f, e.path, "parent", "the interface it is over, e.g. parent: eth0")
	if me, ok := f["mode"]; ok {
		m.Mode = r.choice(me, "a macvlan mode", MacvlanModes)
	}
	return m
}

func (r *reporter) parseVLAN(e kv) *VLAN {
	v := &VLAN{}
	f := r.fields(e.v, e.path, "a VLAN", keysOf(vlanDef)...)
	v.Parent = r.required(f, e.path, "parent", "the interface it tags on, e.g. parent: eth0")
	if ie, ok := f["id"]; ok {
		v.ID, _ = r.integer(ie.v, ie.path, "the VLAN ID", 1, 4094)
	} else {
		r.errf(e.path, "missing id: the VLAN ID (1-4094)")
	}
	return v
}

func (r *reporter) parseBond(e kv) *Bond {
	b := &Bond{Mode: "balance-rr", MIIMon: DefaultMIIMon}
	f := r.fields(e.v, e.path, "a bond", keysOf(bondDef)...)
	b.Ports = r.names(f, e.path, "ports", "[eth0, eth1]")
	if me, ok := f["mode"]; ok {
		b.Mode = r.choice(me, "a bonding mode", BondModes)
	}
	if me, ok := f["miimon"]; ok {
		b.MIIMon, _ = r.integer(me.v, me.path, "the link monitoring interval in ms", 0, 1<<31-1)
	}
	return b
}

func (r *reporter) parseVRF(e kv) *VRF {
	v := &VRF{}
	f := r.fields(e.v, e.path, "a VRF", keysOf(vrfDef)...)
	if te, ok := f["table"]; ok {
		v.Table, _ = r.routingTable(te.v, te.path)
	} else {
		r.errf(e.path, "missing table: the routing table of the VRF, e.g. table: 10")
	}
	v.Ports = r.names(f, e.path, "ports", "[eth1]")
	return v
}

// required reads a text key that must be there.
func (r *reporter) required(f map[string]kv, path, key, what string) string {
	e, ok := f[key]
	if !ok {
		r.errf(path, "missing %s: %s", key, what)
		return ""
	}
	s, _ := r.str(e.v, e.path, what)
	return s
}

// choice reads a text value that must be one of allowed.
func (r *reporter) choice(e kv, what string, allowed []string) string {
	s, ok := r.str(e.v, e.path, what)
	if ok && !slices.Contains(allowed, s) {
		hint := ""
		if n := nearest(s, allowed); n != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", n)
		}
		r.errf(e.path, "%s %q is not one of %s%s", what, s, strings.Join(allowed, ", "), hint)
		return ""
	}
	return s
}

// names reads a list of interface names under key.
func (r *reporter) names(f map[string]kv, path, key, example string) []string {
	e, ok := f[key]
	if !ok {
		r.errf(path, "missing %s: the interfaces of the node it takes, e.g. %s: %s", key, key, example)
		return nil
	}
	items, _ := r.list(e.v, e.path, example)
	var out []string
	for i, item := range items {
		if s, ok := r.str(item, fmt.Sprintf("%s[%d]", e.path, i), "an interface name"); ok {
			out = append(out, s)
		}
	}
	return out
}

// Routing tables the kernel reserves: a rule, route or VRF that names
// them must mean the kernel's own (see routingTable).
const (
	TableMain    = 254
	TableDefault = 253
	TableLocal   = 255
)

// routingTable reads a routing table: a number 1..2^32-1, or main,
// default or local as iproute2 names the kernel's own.
func (r *reporter) routingTable(v *yaml.Node, path string) (int, bool) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		if t, ok := map[string]int{"main": TableMain, "default": TableDefault, "local": TableLocal}[v.Value]; ok {
			return t, true
		}
	}
	return r.integer(v, path, "the routing table (a number, or main, default or local)", 1, 1<<32-1)
}

// validateKinds checks the made interfaces of node n: what they are over
// exists in the node, is not lo, is taken by one bond, VRF or bridge at
// most, and no interface is made over itself.
func validateKinds(r *reporter, n *Node) {
	owner := map[string]string{} // port -> what enslaves it
	for _, b := range n.Bridges {
		for _, p := range b.Ports {
			owner[p] = "bridge " + b.Name
		}
	}
	for _, i := range n.Interfaces {
		if !i.Kind.Made() {
			continue
		}
		ipath := "nodes." + n.Name + ".interfaces." + i.Name
		validateMade(r, n, i, ipath, owner)
	}
	if len(r.probs) == 0 {
		checkKindCycles(r, n)
	}
}

func validateMade(r *reporter, n *Node, i *Interface, ipath string, owner map[string]string) {
	key := map[Kind]string{KindMacvlan: "macvlan", KindVLAN: "vlan", KindBond: "bond", KindVRF: "vrf"}[i.Kind]
	validateMadeSelf(r, n, i, ipath)
	for _, lo := range i.Lower() {
		validateLower(r, n, i, lo, ipath+"."+key, owner)
	}
}

// validateMadeSelf checks what a made interface's own entry says.
func validateMadeSelf(r *reporter, n *Node, i *Interface, ipath string) {
	if i.Peer.Node != "" {
		r.errf(ipath, "%s:%s is a %s: it cannot also be a link endpoint (link a veth interface and make the %s over it)", n.Name, i.Name, i.Kind, i.Kind)
	}
	if i.Queues != 0 {
		r.errf(ipath+".queues", "a %s has no queues of its own to set: remove queues", i.Kind)
	}
	if i.Kind == KindVRF && (len(i.Addresses) > 0 || i.Impair != nil) {
		r.errf(ipath, "a VRF device carries no traffic of its own: put addresses and impairments on its ports")
	}
	if i.Kind == KindVRF && i.VRF.Table >= TableDefault && i.VRF.Table <= TableLocal {
		r.errf(ipath+".vrf.table", "table %d is one of the kernel's own (default, main, local): give the VRF a table of its own, e.g. 10", i.VRF.Table)
	}
}

// validateLower checks lo, an interface made interface i is made over or of.
func validateLower(r *reporter, n *Node, i *Interface, lo, lpath string, owner map[string]string) {
	other := n.Interface(lo)
	switch {
	case lo == "":
		// missing or not text: reported where it was read
	case lo == i.Name:
		r.errf(lpath, "%s cannot be made over itself", i.Name)
	case lo == "lo":
		r.errf(lpath, "a %s cannot be made over lo: name an interface of a link", i.Kind)
	case other == nil && n.Bridge(lo) != nil:
		r.errf(lpath, "%s is a bridge: a %s here is made over an interface entry", lo, i.Kind)
	case other == nil:
		r.errf(lpath, "%s:%s is no interface of node %s: declare it under interfaces: (or link it)", n.Name, lo, n.Name)
	case other.Kind == KindVRF:
		r.errf(lpath, "%s is a VRF: a %s is made over an interface that carries frames", lo, i.Kind)
	case i.Kind == KindBond && len(other.Addresses) > 0:
		r.errf(lpath, "%s has addresses: a bond's port carries no IP; put the addresses on bond %s", lo, i.Name)
	}
	if i.Kind == KindBond || i.Kind == KindVRF {
		if o, taken := owner[lo]; taken {
			r.errf(lpath, "%s is already a port of %s: an interface has one master", lo, o)
		}
		owner[lo] = fmt.Sprintf("%s %s", i.Kind, i.Name)
	}
}

// checkKindCycles refuses interfaces made over each other in a ring.
func checkKindCycles(r *reporter, n *Node) {
	state := map[string]int{} // 1: on the current walk, 2: done
	var walk func(i *Interface, trail []string) bool
	walk = func(i *Interface, trail []string) bool {
		switch state[i.Name] {
		case 1:
			r.errf("nodes."+n.Name+".interfaces."+i.Name, "interfaces made over each other in a ring: %s", strings.Join(append(trail, i.Name), " -> "))
			return false
		case 2:
			return true
		}
		state[i.Name] = 1
		for _, lo := range i.Lower() {
			if l := n.Interface(lo); l != nil && l.Kind.Made() && !walk(l, append(trail, i.Name)) {
				return false
			}
		}
		state[i.Name] = 2
		return true
	}
	for _, i := range n.Interfaces {
		if i.Kind.Made() && !walk(i, nil) {
			return
		}
	}
}
