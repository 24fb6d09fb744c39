package spec

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// A variant is a named change to a deployed lab (variants: in the file),
// for measuring A against B in one run (nslab bench --variants). Per node
// it may change what can be changed in place and undone: sysctls, an
// interface's impairment, NAT and firewall, CPU placement, and commands
// run when the variant is applied (before:) and when it is undone
// (after:).
//
// It is read by splicing its keys into a copy of the file's document and
// parsing that whole, so a variant is validated exactly like the rest of
// the file, and its problems point at its own lines.

// Variant is one variant of a lab.
type Variant struct {
	Name string
	// Lab is the lab with the variant's changes: the same file, name and
	// namespaces, its nodes changed.
	Lab *Lab
	// Nodes are the nodes it changes, in file order.
	Nodes []string
	// Before and After are command lines run in a node (node -> lines)
	// once the variant's changes are applied, and before they are undone.
	Before, After map[string][]string
}

// BaseVariant is the name that needs no entry: the lab as deployed.
const BaseVariant = "base"

// variantNodeKeys are what a variant may change in a node.
var variantNodeKeys = keysOf(variantNodeDef)

// variantIfaceKeys are what a variant may change in an interface.
var variantIfaceKeys = keysOf(variantIfaceDef)

// Variant returns the named variant ("base": the lab as deployed, unless
// the file defines one of that name), or nil.
func (l *Lab) Variant(name string) *Variant {
	for _, v := range l.Variants {
		if v.Name == name {
			return v
		}
	}
	if name == BaseVariant {
		return &Variant{Name: BaseVariant, Lab: l}
	}
	return nil
}

// VariantNames lists the file's variants.
func (l *Lab) VariantNames() []string {
	var out []string
	for _, v := range l.Variants {
		out = append(out, v.Name)
	}
	return out
}

// parseVariants reads variants: once the rest of the file is sound.
func (r *reporter) parseVariants(root *yaml.Node, lab *Lab) {
	var vnode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "variants" {
			vnode = root.Content[i+1]
		}
	}
	if vnode == nil {
		return
	}
	for _, ve := range r.entries(vnode, "variants", "variant name: {node: changes}") {
		path := "variants." + ve.key
		r.at(path, ve.k.Line, ve.k.Column)
		if !validVariantName(ve.key) {
			r.errAt(ve.k.Line, ve.k.Column, path, "variant name %q: use letters, digits, - and _ (a bench takes variants as a comma-separated list of names)", ve.key)
			continue
		}
		if v := r.parseVariant(root, lab, ve, path); v != nil {
			lab.Variants = append(lab.Variants, v)
		}
	}
	maxQueues(lab)
}

// maxQueues sets each interface's MaxQueues, in the lab and its
// variants' labs alike, when a variant gives it more queues than the
// file: the veth is created with that many (a veth's queues can only be
// lowered and raised again up to what it was created with).
func maxQueues(lab *Lab) {
	for _, n := range lab.Nodes {
		for _, i := range n.Interfaces {
			most := i.Queues
			for _, v := range lab.Variants {
				most = max(most, v.Lab.Node(n.Name).Interface(i.Name).Queues)
			}
			if most <= max(i.Queues, 1) {
				continue
			}
			i.MaxQueues = most
			for _, v := range lab.Variants {
				v.Lab.Node(n.Name).Interface(i.Name).MaxQueues = most
			}
		}
	}
}

func validVariantName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}

// parseVariant splices one variant into a copy of the document and parses
// the copy; its problems are the variant's, under its path.
func (r *reporter) parseVariant(root *yaml.Node, lab *Lab, ve kv, path string) *Variant {
	doc := deepCopy(root)
	deleteKey(doc, "variants")
	v := &Variant{Name: ve.key, Before: map[string][]string{}, After: map[string][]string{}}
	for _, ne := range r.entries(ve.v, path, "node name: changes") {
		npath := path + "." + ne.key
		r.at(npath, ne.k.Line, ne.k.Column)
		if ne.key == VariantMachine {
			r.spliceMachine(doc, lab, ne, npath)
			continue
		}
		r.spliceNode(doc, lab, v, ne, npath)
	}
	if len(r.probs) > 0 {
		return nil
	}
	v.Lab = r.parseSpliced(doc, lab, v.Name, path)
	if v.Lab == nil || !r.variantKeepsForwarding(lab, v, path) {
		return nil
	}
	return v
}

// spliceNode puts a variant's changes of one node (ne) into the copy
// doc, and its before: and after: commands into v.
func (r *reporter) spliceNode(doc *yaml.Node, lab *Lab, v *Variant, ne kv, npath string) {
	target := MappingValue(MappingValue(doc, "nodes"), ne.key)
	if target == nil {
		r.errAt(ne.k.Line, ne.k.Column, npath, "no node %s in nodes: name one of %s", ne.key, strings.Join(nodeNames(lab), ", "))
		return
	}
	if target.Kind != yaml.MappingNode { // a node written as null: give it a mapping to change
		*target = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: target.Line, Column: target.Column}
	}
	v.Nodes = append(v.Nodes, ne.key)
	f := r.fields(ne.v, npath, "a variant's node (what a variant may change)", variantNodeKeys...)
	for _, key := range variantNodeKeys {
		e, ok := f[key]
		switch {
		case !ok:
		case key == "before":
			v.Before[ne.key] = r.commands(e)
		case key == "after":
			v.After[ne.key] = r.commands(e)
		case key == "interfaces":
			r.spliceInterfaces(lab.Node(ne.key), target, e)
		case key == "sysctls": // merged: a variant sets some, the rest stay as deployed
			mergeMapping(target, e)
		default:
			setKey(target, e.k, e.v)
		}
	}
}

// variantKeepsForwarding refuses a variant that changes whether a node
// forwards, or its threaded NAPI placement.
func (r *reporter) variantKeepsForwarding(lab *Lab, v *Variant, path string) bool {
	for _, node := range v.Nodes {
		b, n := lab.Node(node), v.Lab.Node(node)
		if b.Forwarding.IPv4 != n.Forwarding.IPv4 || b.Forwarding.IPv6 != n.Forwarding.IPv6 {
			r.errf(path+"."+node+".forwarding", "a variant changes a node's fastpath, not whether it forwards: give ipv4: %v and ipv6: %v as the node has them", b.Forwarding.IPv4, b.Forwarding.IPv6)
			return false
		}
		if (b.Receive == ReceiveNAPI || n.Receive == ReceiveNAPI) && (b.CPUs.String() != n.CPUs.String() || b.Receive != n.Receive) {
			r.errf(path+"."+node, "a variant cannot change threaded NAPI placement (receive: napi), which starts and stops the kernel's napi kthreads: give the variant receive: rps, or deploy each placement apart")
			return false
		}
	}
	return true
}

// VariantMachine is the key of a variant's machine-wide changes
// (machine: {sysctls: ...}), beside its nodes: no node of a lab with
// variants may have this name.
const VariantMachine = "machine"

// spliceMachine merges a variant's machine: {sysctls} over the lab's
// machine: mapping in the copy, creating it.
func (r *reporter) spliceMachine(doc *yaml.Node, lab *Lab, e kv, path string) {
	if lab.Node(VariantMachine) != nil {
		r.errAt(e.k.Line, e.k.Column, path, "in a variant, machine: is the machine-wide settings, and this lab has a node named machine too: rename the node to change it in a variant")
		return
	}
	f := r.fields(e.v, path, "a variant's machine settings", keysOf(machineDef)...)
	se, ok := f["sysctls"]
	if !ok {
		return
	}
	m := MappingValue(doc, VariantMachine)
	if m == nil {
		m = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: VariantMachine}, m)
	}
	mergeMapping(m, se)
}

// mergeMapping sets each entry of a variant's mapping e (sysctls) in the
// node's mapping of that key, creating it.
func mergeMapping(target *yaml.Node, e kv) {
	m := MappingValue(target, e.key)
	if m == nil || m.Kind != yaml.MappingNode {
		setKey(target, e.k, e.v)
		return
	}
	if e.v.Kind != yaml.MappingNode {
		setKey(target, e.k, e.v) // not a mapping: the parse says so, at the variant's line
		return
	}
	for i := 0; i+1 < len(e.v.Content); i += 2 {
		k, v := e.v.Content[i], e.v.Content[i+1]
		deleteKey(m, k.Value)
		m.Content = append(m.Content, k, v) // a null is kept, for the parse to refuse: a sysctl cannot be unset
	}
}

// spliceInterfaces puts a variant's interface changes into the node's copy.
func (r *reporter) spliceInterfaces(n *Node, target *yaml.Node, e kv) {
	ifaces := MappingValue(target, "interfaces")
	for _, ie := range r.entries(e.v, e.path, "interface name: changes") {
		ipath := e.path + "." + ie.key
		r.at(ipath, ie.k.Line, ie.k.Column)
		if n.Interface(ie.key) == nil || ifaces == nil {
			var names []string
			for _, i := range n.Interfaces {
				names = append(names, i.Name)
			}
			r.errAt(ie.k.Line, ie.k.Column, ipath, "node %s has no interface %s: name one of %s", n.Name, ie.key, strings.Join(names, ", "))
			continue
		}
		it := MappingValue(ifaces, ie.key)
		if it.Kind != yaml.MappingNode {
			*it = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: it.Line, Column: it.Column}
		}
		for _, fe := range r.fields(ie.v, ipath, "a variant's interface (what a variant may change)", variantIfaceKeys...) {
			if fe.key == "offloads" { // merged: a variant sets some, the rest stay as deployed
				mergeMapping(it, fe)
				continue
			}
			setKey(it, fe.k, fe.v)
		}
	}
}

// parseSpliced parses the spliced document as a whole lab; problems found
// only there are the variant's, under its path.
func (r *reporter) parseSpliced(doc *yaml.Node, lab *Lab, name, path string) *Lab {
	r2 := &reporter{file: r.file, where: map[string]pos{}}
	vl := &Lab{File: lab.File, Source: lab.Source, SHA256: lab.SHA256}
	ex := r2.parseLab(doc, vl)
	validate(r2, vl, ex)
	for _, p := range r2.probs {
		if rest, ok := strings.CutPrefix(p.Path, "nodes."); ok {
			p.Path = path + "." + rest
		}
		p.Msg = "in variant " + name + ": " + p.Msg
		r.probs = append(r.probs, p)
	}
	if len(r2.probs) > 0 {
		return nil
	}
	return vl
}

// deepCopy copies a YAML tree (positions kept).
func deepCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = deepCopy(x)
	}
	return &c
}

// MappingValue is the value of key in YAML mapping m, or nil (m nil or
// not a mapping, or without key): the one lookup the file's readers and
// writers share.
func MappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey sets key k to v in mapping m, replacing it where it is; a null v
// removes the key (a variant's "impair: null" takes the impairment away).
func setKey(m *yaml.Node, k, v *yaml.Node) {
	deleteKey(m, k.Value)
	if isNull(v) {
		return
	}
	m.Content = append(m.Content, k, v)
}

// deleteKey removes key from mapping m.
func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}
