package spec

import (
	"bytes"
	"fmt"
	"net/netip"

	"gopkg.in/yaml.v3"
)

// WithUnderlays is a lab file with hosts.HOST.underlay set for each host
// of underlays: the file of a lab placed on machines whose addresses were
// learned after it was written (a host with node_selector: placed on a
// Kubernetes node). The rest of the file is kept as the YAML library
// writes it back: its content and comments, not its exact layout.
func WithUnderlays(file []byte, underlays map[string]netip.Addr) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(file, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("the file is not a lab")
	}
	hosts := MappingValue(doc.Content[0], "hosts")
	for name, addr := range underlays {
		h := MappingValue(hosts, name)
		if h == nil || h.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("the file has no hosts.%s mapping to place", name)
		}
		setKey(h, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "underlay"}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: addr.String()})
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}
