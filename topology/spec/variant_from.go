package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// VariantFrom makes, from another version of lab l's file (text, named
// path: a baseline's copy of the file it measured), the variant that
// turns l into that version, named name. It returns nil when the two
// differ in nothing that is measured (tests:, expect: and variants: aside),
// and an error naming the first difference a variant cannot make: the
// other file must be the same lab (name, nodes, links, traffic), changed
// only where a variant may change it (see variantNodeKeys), with every
// sysctl and offload l sets set there too (a variant sets them over the
// lab's; it cannot unset one).
func VariantFrom(l *Lab, path string, text []byte, name string) (*Variant, error) {
	if l.Variant(name) != nil {
		return nil, fmt.Errorf("the lab has a variant named %s already: rename it", name)
	}
	other, err := Parse(path, text)
	if err != nil {
		return nil, err
	}
	a, err := docRoot(l.Source)
	if err != nil {
		return nil, err
	}
	b, err := docRoot(text)
	if err != nil {
		return nil, err
	}
	changed, err := variantDiff(a, b)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return nil, nil
	}
	other.File, other.Source, other.SHA256, other.Variants = l.File, l.Source, l.SHA256, nil
	return &Variant{Name: name, Lab: other, Nodes: changed, Before: map[string][]string{}, After: map[string][]string{}}, nil
}

// docRoot is a file's top mapping.
func docRoot(text []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil || len(doc.Content) == 0 {
		return nil, fmt.Errorf("not a lab file: %v", err)
	}
	return doc.Content[0], nil
}

// unmeasured are top-level keys whose differences change nothing a bench
// measures.
var unmeasured = []string{"variants", "tests", "expect"}

// variantDiff compares two lab files' top mappings: the nodes that differ
// where a variant may change them ("machine" for machine-wide sysctls), or
// the first difference no variant makes.
func variantDiff(a, b *yaml.Node) ([]string, error) {
	var changed []string
	for _, key := range unionKeys(a, b) {
		va, vb := MappingValue(a, key), MappingValue(b, key)
		switch {
		case slices.Contains(unmeasured, key):
		case key == "nodes":
			nodes, err := nodesDiff(va, vb)
			if err != nil {
				return nil, err
			}
			changed = append(changed, nodes...)
		case key == "machine":
			diff, err := settingsDiff("machine", va, vb, []string{"sysctls"}, []string{"sysctls"})
			if err != nil {
				return nil, err
			}
			if diff {
				changed = append(changed, VariantMachine)
			}
		case canonical(va) != canonical(vb):
			return nil, fmt.Errorf("%s: %s here, %s in the baseline's: another lab, or another measurement of it", key, canonical(va), canonical(vb))
		}
	}
	return changed, nil
}

// nodesDiff compares the nodes: mappings, node by node.
func nodesDiff(a, b *yaml.Node) ([]string, error) {
	ka, kb := mappingKeys(a), mappingKeys(b)
	slices.Sort(ka)
	slices.Sort(kb)
	if !slices.Equal(ka, kb) {
		return nil, fmt.Errorf("nodes: %s here, %s in the baseline's: another lab", strings.Join(ka, ", "), strings.Join(kb, ", "))
	}
	var changed []string
	for _, n := range ka {
		diff, err := settingsDiff("nodes."+n, MappingValue(a, n), MappingValue(b, n), variantNodeKeys, []string{"sysctls"})
		if err != nil {
			return nil, err
		}
		if diff {
			changed = append(changed, n)
		}
	}
	return changed, nil
}

// settingsDiff compares a node's (or the machine's) mappings: whether
// they differ in keys of may, an error for a difference elsewhere. merged
// are keys a variant sets over the lab's (sysctls), whose every entry
// here must be in b too. A node's interfaces are compared the same way,
// with an interface's variant keys.
func settingsDiff(path string, a, b *yaml.Node, may, merged []string) (bool, error) {
	diff := false
	for _, key := range unionKeys(a, b) {
		va, vb := MappingValue(a, key), MappingValue(b, key)
		if canonical(va) == canonical(vb) {
			continue
		}
		p := path + "." + key
		switch {
		case key == "interfaces" && slices.Contains(may, key):
			if err := interfacesDiff(p, va, vb); err != nil {
				return false, err
			}
		case key == "forwarding" || key == "before" || key == "after" || !slices.Contains(may, key):
			return false, fmt.Errorf("%s: %s here, %s in the baseline's: a baseline's lab may differ from this one only in what a variant changes (%s)", p, canonical(va), canonical(vb), variantKeysText())
		case slices.Contains(merged, key):
			if missing := missingKeys(va, vb); len(missing) > 0 {
				return false, fmt.Errorf("%s: this lab sets %s, the baseline's does not: a variant cannot unset them; set them in both", p, strings.Join(missing, ", "))
			}
		}
		if key == "receive" && (canonical(va) == `"napi"` || canonical(vb) == `"napi"`) {
			return false, fmt.Errorf("%s: threaded NAPI placement differs from the baseline's, and a variant cannot change it: measure each apart", p)
		}
		diff = true
	}
	return diff, nil
}

// interfacesDiff compares a node's interfaces: mappings.
func interfacesDiff(path string, a, b *yaml.Node) error {
	ka, kb := mappingKeys(a), mappingKeys(b)
	slices.Sort(ka)
	slices.Sort(kb)
	if !slices.Equal(ka, kb) {
		return fmt.Errorf("%s: %s here, %s in the baseline's: another lab", path, strings.Join(ka, ", "), strings.Join(kb, ", "))
	}
	for _, i := range ka {
		if _, err := settingsDiff(path+"."+i, MappingValue(a, i), MappingValue(b, i), variantIfaceKeys, []string{"offloads"}); err != nil {
			return err
		}
	}
	return nil
}

// variantKeysText lists what a variant may change.
func variantKeysText() string {
	keys := slices.DeleteFunc(slices.Clone(variantNodeKeys), func(k string) bool { return k == "before" || k == "after" || k == "forwarding" })
	return strings.Join(keys, ", ") + "; an interface's " + strings.Join(variantIfaceKeys, ", ")
}

// unionKeys are the keys of two mappings (nil: none), a's first.
func unionKeys(a, b *yaml.Node) []string {
	out := mappingKeys(a)
	for _, k := range mappingKeys(b) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// mappingKeys are a mapping's keys in order (nil or not a mapping: none).
func mappingKeys(m *yaml.Node) []string {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		out = append(out, m.Content[i].Value)
	}
	return out
}

// missingKeys are the keys of mapping a that b lacks.
func missingKeys(a, b *yaml.Node) []string {
	have := map[string]bool{}
	for _, k := range mappingKeys(b) {
		have[k] = true
	}
	return slices.DeleteFunc(mappingKeys(a), func(k string) bool { return have[k] })
}

// canonical is a YAML value as JSON: the same for the same value however
// it is written (flow or block, quoted or not, comments). A missing
// value is null.
func canonical(n *yaml.Node) string {
	if n == nil {
		return "null"
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return fmt.Sprintf("%q", n.Value)
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return "{}"
	}
	out, err := json.Marshal(normalize(v))
	if err != nil {
		return fmt.Sprintf("%q", n.Value)
	}
	return string(out)
}

// normalize turns YAML's map[any]any (from keys that are not strings)
// into JSON's map[string]any, recursively.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Collect(maps.Keys(x)) {
			x[k] = normalize(x[k])
		}
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	}
	return v
}
