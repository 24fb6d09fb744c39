// Package export writes a lab in other tools' formats. Containerlab is the
// first: the same nodes and links as containers, for users who want to run
// a lab across machines with containerlab's VXLAN links or on Kubernetes
// with clabernetes.
package export

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"gopkg.in/yaml.v3"
)

// DefaultImage is the container image of exported nodes: small, with
// iproute2, tc, nftables and sysctl, and the image containerlab's own
// examples use for linux nodes.
const DefaultImage = "ghcr.io/hellt/network-multitool"

// Containerlab is a containerlab topology file.
type Containerlab struct {
	Name     string   `yaml:"name"`
	Topology Topology `yaml:"topology"`

	order []string // node names in the lab's order
}

// Topology is its topology section.
type Topology struct {
	Nodes map[string]*ClabNode `yaml:"nodes"`
	Links []ClabLink           `yaml:"links,omitempty"`
}

// ClabNode is one containerlab node.
type ClabNode struct {
	Kind  string   `yaml:"kind"`
	Image string   `yaml:"image"`
	Binds []string `yaml:"binds,omitempty"`
	// NetworkMode none: no management eth0, so an nslab interface called
	// eth0 keeps its name.
	NetworkMode string   `yaml:"network-mode"`
	Exec        []string `yaml:"exec,omitempty"`
}

// ClabLink is a link in containerlab's extended veth form.
type ClabLink struct {
	Type      string         `yaml:"type"`
	Endpoints []ClabEndpoint `yaml:"endpoints"`
	MTU       int            `yaml:"mtu,omitempty"`
}

// ClabEndpoint is one end of a link.
type ClabEndpoint struct {
	Node      string `yaml:"node"`
	Interface string `yaml:"interface"`
	MAC       string `yaml:"mac,omitempty"`
}

// DefaultFRRImage is the image of exported nodes that run FRR: FRR's own,
// of the version Debian's package nslab runs has.
const DefaultFRRImage = "quay.io/frrouting/frr:8.4.1"

// Options are an export's images and where its files go.
type Options struct {
	Image, FRRImage string
	// Dir, when set, is where the topology file goes: the nodes' files
	// (files:, and FRR's daemons, frr.conf and vtysh.conf) are written
	// under Dir/NODE/ and bound into the containers. Without it they
	// cannot be carried, and say so.
	Dir string
}

// File is a file the export writes beside the topology: Path relative to
// Options.Dir.
type File struct {
	Path string
	Data []byte
}

// WithFiles is ToContainerlab for a lab whose nodes have files or run FRR:
// with o.Dir, each such file is returned to be written under o.Dir and
// bound into its node, and FRR nodes get o.FRRImage, which starts FRR
// from the bound daemons file.
func WithFiles(l *spec.Lab, o Options) (*Containerlab, []File, []string) {
	c, left := ToContainerlab(l, o.Image)
	var files []File
	for _, n := range l.Nodes {
		node := c.Topology.Nodes[n.Name]
		own := nodeFiles(n)
		if len(own) == 0 {
			continue
		}
		if o.Dir == "" {
			left = append(left, fmt.Sprintf("node %s's files (%s): written beside the topology and bound only with a directory to export into (dir)", n.Name, strings.Join(sortedPaths(own), ", ")))
			continue
		}
		if n.FRR != nil {
			node.Image = o.FRRImage
		}
		for _, p := range sortedPaths(own) {
			rel := n.Name + p
			files = append(files, File{Path: rel, Data: own[p]})
			node.Binds = append(node.Binds, rel+":"+p)
		}
	}
	for _, n := range l.Nodes {
		if n.BIRD != nil {
			left = append(left, fmt.Sprintf("node %s's bird: containerlab's linux nodes run no BIRD of nslab's; its bird.conf is bound, start BIRD in the image you give", n.Name))
		}
	}
	return c, files, left
}

// nodeFiles are the files of node n's own tree: its files:, and FRR's
// daemons, frr.conf and vtysh.conf as nslab writes them where files: does
// not give them.
func nodeFiles(n *spec.Node) map[string][]byte {
	out := map[string][]byte{}
	if n.FRR != nil {
		out[spec.FRRDaemonsPath] = []byte(lab.FRRDaemonsFile(n.FRR))
		out[spec.FRRVtyshPath] = []byte("service integrated-vtysh-config\n")
		if n.FRR.Config != "" {
			out[spec.FRRConfPath] = []byte(n.FRRHead(spec.FRRConfPath) + n.FRR.Config)
		}
	}
	if n.BIRD != nil && n.BIRD.Config != "" {
		out[spec.BIRDConfPath] = []byte(n.BIRD.Config)
	}
	for _, f := range n.Files {
		out[f.Path] = []byte(n.FRRHead(f.Path) + f.Text)
	}
	return out
}

func sortedPaths(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// ToContainerlab converts a validated lab. Nodes become kind linux with
// image; their links become veth links with the lab's MACs and MTUs; what
// nslab sets inside a node (sysctls, bridges, addresses, impairments,
// routes, NAT and firewall, exec lines) becomes the node's exec lines, the
// commands of nslab's own deploy script, since containerlab applies no
// addresses to linux nodes; services run in the background. It also
// returns what it could not carry over, one sentence each.
func ToContainerlab(l *spec.Lab, image string) (*Containerlab, []string) {
	c := &Containerlab{Name: l.Name, Topology: Topology{Nodes: map[string]*ClabNode{}}}
	inside := lab.InsideCommands(l)
	for _, n := range l.Nodes {
		node := &ClabNode{Kind: "linux", Image: image, NetworkMode: "none", Exec: inside[n.Name]}
		for i, r := range n.Run {
			node.Exec = append(node.Exec, fmt.Sprintf("sh -c %s", lab.ShellQuote(fmt.Sprintf("setsid sh -c %s </dev/null >/tmp/nslab.run%d.log 2>&1 &", lab.ShellQuote(r), i))))
		}
		c.Topology.Nodes[n.Name] = node
		c.order = append(c.order, n.Name)
	}
	for _, k := range l.Links {
		a, b := l.Node(k.A.Node).Interface(k.A.Interface), l.Node(k.B.Node).Interface(k.B.Interface)
		c.Topology.Links = append(c.Topology.Links, ClabLink{Type: "veth", MTU: a.MTU,
			Endpoints: []ClabEndpoint{endpoint(k.A, a), endpoint(k.B, b)}})
	}
	return c, leftOut(l)
}

func endpoint(e spec.Endpoint, i *spec.Interface) ClabEndpoint {
	out := ClabEndpoint{Node: e.Node, Interface: e.Interface}
	if i.MAC != nil {
		out.MAC = i.MAC.String()
	}
	return out
}

// leftOut names what the lab has that a containerlab topology does not
// carry.
func leftOut(l *spec.Lab) []string {
	var out []string
	var placed, vfs []string
	for _, n := range l.Nodes {
		if n.Placed() || n.Receive != "" {
			placed = append(placed, n.Name)
		}
		for _, i := range n.Interfaces {
			if i.Kind == spec.KindVF {
				vfs = append(vfs, n.Name+":"+i.Name)
			}
		}
	}
	if len(placed) > 0 {
		out = append(out, fmt.Sprintf("CPU placement of %s: it acts on the host (IRQs, RPS), not in a container", strings.Join(placed, ", ")))
	}
	if len(vfs) > 0 {
		out = append(out, fmt.Sprintf("SR-IOV VFs %s: containerlab has no VF links; use a host-device link by hand", strings.Join(vfs, ", ")))
	}
	if l.Spans() {
		out = append(out, fmt.Sprintf("hosts %s: the export puts every node on one containerlab host, the links between hosts as veth links (with their VXLAN MTUs); spread it with containerlab's vxlan links or clabernetes", strings.Join(l.HostNames(), ", ")))
	}
	if len(l.Traffic) > 0 {
		names := make([]string, len(l.Traffic))
		for i, t := range l.Traffic {
			names[i] = t.Name
		}
		out = append(out, fmt.Sprintf("traffic runs %s: containerlab sends no traffic", strings.Join(names, ", ")))
	}
	return out
}

// Marshal writes c as YAML, nodes in the lab's order.
func (c *Containerlab) Marshal() ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return nil, fmt.Errorf("containerlab topology: %w", err)
	}
	sortNodes(&doc, c.order)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("containerlab topology: %w", err)
	}
	return out, nil
}

// sortNodes puts the topology's node entries in order (yaml.v3 writes a
// map's keys sorted).
func sortNodes(doc *yaml.Node, order []string) {
	nodes := spec.MappingValue(spec.MappingValue(doc, "topology"), "nodes")
	if nodes == nil {
		return
	}
	type pair struct{ k, v *yaml.Node }
	var pairs []pair
	for i := 0; i+1 < len(nodes.Content); i += 2 {
		pairs = append(pairs, pair{nodes.Content[i], nodes.Content[i+1]})
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return slices.Index(order, a.k.Value) - slices.Index(order, b.k.Value) })
	nodes.Content = nodes.Content[:0]
	for _, p := range pairs {
		nodes.Content = append(nodes.Content, p.k, p.v)
	}
}
