package importlab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// clabFile is the part of a containerlab topology file nslab reads.
type clabFile struct {
	Name     string `yaml:"name"`
	Mgmt     any    `yaml:"mgmt"`
	Topology struct {
		Defaults clabNode            `yaml:"defaults"`
		Kinds    map[string]clabNode `yaml:"kinds"`
		Groups   map[string]clabNode `yaml:"groups"`
		Nodes    map[string]clabNode `yaml:"nodes"`
		Links    []clabLink          `yaml:"links"`
	} `yaml:"topology"`
}

// clabNode is a node, or the defaults, a kind or a group it takes from.
// Rest keeps the settings nslab does not read, to say so.
type clabNode struct {
	Kind  string         `yaml:"kind"`
	Image string         `yaml:"image"`
	Group string         `yaml:"group"`
	Binds []string       `yaml:"binds"`
	Exec  []string       `yaml:"exec"`
	Rest  map[string]any `yaml:",inline"`
}

// clabLink is a link in the brief form (endpoints: ["a:eth1", "b:eth1"])
// or the extended one (endpoints: [{node: a, interface: eth1}, ...]).
type clabLink struct {
	Type      string `yaml:"type"`
	Endpoints []any  `yaml:"endpoints"`
}

// Containerlab reads a containerlab topology file. Nodes of kind linux
// become nodes (their binds into a node's own directories become files,
// their exec lines exec lines; an FRR image or an FRR configuration bound
// makes the node run FRR with those files, forwarding on as containers
// inherit it from a Docker host); bridges become segments; links between
// them links. Every other kind, and links to the host, macvlan or the
// management network, are listed in Dropped.
func Containerlab(path string) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f clabFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Topology.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no topology.nodes: not a containerlab topology file", path)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	l := &Lab{Name: labName(f.Name), From: fmt.Sprintf("%s (containerlab lab %s)", filepath.Base(path), f.Name)}
	l.drop("the management network: containerlab's eth0 on a Docker bridge for every node (nslab nodes have only their lab links)")
	names := make([]string, 0, len(f.Topology.Nodes))
	for name := range f.Topology.Nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	kinds := map[string]string{}
	images := map[string][]string{}
	for _, name := range names {
		n := f.resolve(f.Topology.Nodes[name])
		kinds[name] = n.Kind
		switch n.Kind {
		case "linux":
			if err := l.clabLinux(name, n, dir); err != nil {
				return nil, err
			}
			if n.Image != "" {
				images[n.Image] = append(images[n.Image], name)
			}
		case "bridge", "ovs-bridge":
			l.Segments = append(l.Segments, Segment{Name: name})
		default:
			l.drop("node %s: kind %s (only kind linux and bridges are carried; its links are left out too)", name, orNone(n.Kind))
		}
	}
	for _, img := range sortedKeys(images) {
		l.drop("image %s (%s): nslab runs the host's programs in the node's namespace", img, strings.Join(images[img], ", "))
	}
	for i, k := range f.Topology.Links {
		if err := l.clabLink(i, k, kinds); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	l.Segments = slices.DeleteFunc(l.Segments, func(s Segment) bool {
		if len(s.Endpoints) == 0 {
			l.drop("bridge %s: no link of the lab reaches it", s.Name)
		}
		return len(s.Endpoints) == 0
	})
	return l, nil
}

// resolve merges a node's settings over its group's, its kind's and the
// defaults, as containerlab does: the node's own win; binds and exec
// lines add up.
func (f *clabFile) resolve(n clabNode) clabNode {
	layers := []clabNode{f.Topology.Defaults}
	kind := firstOf(n.Kind, f.Topology.Groups[n.Group].Kind, f.Topology.Defaults.Kind)
	layers = append(layers, f.Topology.Kinds[kind], f.Topology.Groups[n.Group], n)
	out := clabNode{Kind: kind, Rest: map[string]any{}}
	for _, x := range layers {
		out.Image = firstOf(x.Image, out.Image)
		out.Binds = append(out.Binds, x.Binds...)
		out.Exec = append(out.Exec, x.Exec...)
		for k, v := range x.Rest {
			out.Rest[k] = v
		}
	}
	return out
}

// clabLinux adds a linux node.
func (l *Lab) clabLinux(name string, n clabNode, dir string) error {
	node := l.Node(name)
	node.Exec = n.Exec
	for _, b := range n.Binds {
		parts := strings.Split(b, ":")
		if len(parts) < 2 {
			l.drop("node %s: bind %q (not SOURCE:TARGET)", name, b)
			continue
		}
		src, dst := parts[0], parts[1]
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, src)
		}
		st, err := os.Stat(src)
		switch {
		case err != nil:
			return fmt.Errorf("node %s: bind %s: %w", name, b, err)
		case st.IsDir():
			l.drop("node %s: bind of directory %s to %s (nslab carries files)", name, parts[0], dst)
		case !ownFile(dst):
			l.drop("node %s: bind to %s (a node's own files are under %s)", name, dst, strings.Join(nodeFiles, ", "))
		default:
			node.Files = append(node.Files, File{Path: dst, From: src})
		}
	}
	frrConf := slices.ContainsFunc(node.Files, func(f File) bool { return strings.HasPrefix(f.Path, "/etc/frr/") })
	if strings.Contains(strings.ToLower(n.Image), "frr") || frrConf {
		node.FRR, node.Forwarding = true, true
		node.FRRWhy = fmt.Sprintf("runs FRR, as the original (image %s) with its files; forwards, as a container inherits it from a Docker host", orNone(n.Image))
	}
	for _, k := range sortedKeys(n.Rest) {
		l.drop("node %s: %s", name, k)
	}
	return nil
}

// clabLink adds link i, between nodes or to a segment.
func (l *Lab) clabLink(i int, k clabLink, kinds map[string]string) error {
	var eps []string
	for _, e := range k.Endpoints {
		switch v := e.(type) {
		case string:
			eps = append(eps, v)
		case map[string]any:
			eps = append(eps, fmt.Sprintf("%v:%v", v["node"], v["interface"]))
		default:
			return fmt.Errorf("links[%d]: endpoint %v: want node:interface", i, e)
		}
	}
	if len(eps) != 2 {
		l.drop("links[%d] %v (a %s link; nslab carries veth links between two nodes)", i, eps, orNone(k.Type))
		return nil
	}
	var ends [2][2]string
	for j, ep := range eps {
		node, ifc, ok := strings.Cut(ep, ":")
		if !ok {
			return fmt.Errorf("links[%d]: endpoint %q: want node:interface", i, ep)
		}
		ends[j] = [2]string{node, ifc}
		if kind, known := kinds[node]; !known || (kind != "linux" && kind != "bridge" && kind != "ovs-bridge") {
			l.drop("links[%d] %s - %s (%s is not a node nslab carries)", i, eps[0], eps[1], node)
			return nil
		}
	}
	for j, e := range ends {
		if k := kinds[e[0]]; k == "bridge" || k == "ovs-bridge" {
			other := ends[1-j]
			for s := range l.Segments {
				if l.Segments[s].Name == e[0] {
					l.Segments[s].Endpoints = append(l.Segments[s].Endpoints, other[0]+":"+other[1])
				}
			}
			return nil
		}
	}
	l.Links = append(l.Links, [2]string{eps[0], eps[1]})
	return nil
}

func firstOf(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none given"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
