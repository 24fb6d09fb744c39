// Package importlab reads labs written for other tools (containerlab's
// topology files, Kathara's lab directories) and writes them as nslab lab
// files, taken literally: their nodes, links and shared segments, the
// files they bind or copy into nodes (as files: read from where they
// are), their exec and startup lines (as exec:), and FRR where the
// original runs it. What nslab cannot carry (images, management networks,
// kinds other than Linux, resource limits) is listed in the result and at
// the top of the file, never dropped without a word. It is pure: it reads
// the original's files and writes nothing but what the caller asks.
package importlab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/spec"
	"gopkg.in/yaml.v3"
)

// Lab is an imported lab, in the terms of an nslab lab file.
type Lab struct {
	Name     string
	From     string // what it was imported from, for the file's head
	Nodes    []*Node
	Links    [][2]string // node:interface pairs
	Segments []Segment
	// Dropped says what of the original nslab does not carry, one line
	// each; Notes what it does otherwise than the original would.
	Dropped []string
	Notes   []string
	// Tests are the tests of the lab file, from a lab checker's
	// configuration (Checker), which CheckerFrom names.
	Tests       []Test
	CheckerFrom []string
}

// Node is an imported node.
type Node struct {
	Name       string
	Forwarding bool
	Sysctls    [][2]string       // in the original's order
	MACs       map[string]string // interface: its MAC
	FRR        bool              // runs FRR from its files (daemons, frr.conf)
	Quagga     bool              // its FRR configuration is Quagga's
	FRRWhy     string            // why it is taken to run FRR
	Files      []File
	Exec       []string
	Startup    []string // scripts run whole (startup:), absolute paths of the original's
}

// File is a file of a node's own tree, read from the original's.
type File struct {
	Path string // in the node
	From string // the original's file, absolute
	Was  string // its path in the original's node, where nslab puts it elsewhere
}

// Segment is a shared wire of one or more interfaces.
type Segment struct {
	Name      string
	Endpoints []string
}

// Node returns the node named name, making it when new.
func (l *Lab) Node(name string) *Node {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n
		}
	}
	n := &Node{Name: name}
	l.Nodes = append(l.Nodes, n)
	return n
}

// nodeNamed is the node named name, or nil.
func (l *Lab) nodeNamed(name string) *Node {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// setMAC gives interface ifname the MAC mac.
func (n *Node) setMAC(ifname, mac string) {
	if n.MACs == nil {
		n.MACs = map[string]string{}
	}
	n.MACs[ifname] = mac
}

// note records what nslab does otherwise than the original.
func (l *Lab) note(format string, args ...any) {
	l.Notes = append(l.Notes, fmt.Sprintf(format, args...))
}

// drop records what is not carried.
func (l *Lab) drop(format string, args ...any) {
	l.Dropped = append(l.Dropped, fmt.Sprintf(format, args...))
}

// nodeFiles are the directories a node's own files may be in (see
// spec: a node's view has /etc, /run, /var/log, /tmp and, where it has
// files there, /var/www of its own).
var nodeFiles = []string{"/etc/", "/run/", "/var/run/", "/var/log/", "/tmp/", "/var/www/"}

// ownFile reports whether path can be a file of a node's own tree.
func ownFile(path string) bool {
	return slices.ContainsFunc(nodeFiles, func(d string) bool { return strings.HasPrefix(path, d) })
}

// labName makes an nslab lab name (lowercase letters, digits and -, at
// most spec.MaxLabName) of s, cut where longer.
func labName(s string) string {
	s = cleanName(s)
	if len(s) > spec.MaxLabName {
		s = strings.TrimRight(s[:spec.MaxLabName], "-")
	}
	if s == "" {
		s = "imported"
	}
	return s
}

// cleanName is s in lowercase letters, digits and -.
func cleanName(s string) string {
	s = strings.ToLower(s)
	s = regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(s, "-")
	return strings.Trim(s, "-")
}

// genericDirs are directory names that say nothing of the lab in them.
var genericDirs = []string{"lab", "labs", "kathara", "kathara-lab", "src"}

// importName is the lab name of the original in dir (an absolute path):
// the directory's name without Kathara's "kathara-lab_" and a leading
// date (exam labs are named by their day), or its parent's where the
// directory's name says nothing (lab). Where that is longer than a lab
// name may be, its beginning and four hex digits of a hash of the whole
// path: two labs whose long names begin alike stay apart.
func importName(dir string) string {
	base := filepath.Base(dir)
	if slices.Contains(genericDirs, strings.ToLower(base)) {
		base = filepath.Base(filepath.Dir(dir))
	}
	base = strings.TrimPrefix(base, "kathara-lab_")
	base = leadingDate.ReplaceAllString(base, "")
	name := cleanName(base)
	if name == "" {
		return "imported"
	}
	if len(name) <= spec.MaxLabName {
		return name
	}
	sum := sha256.Sum256([]byte(dir))
	tag := hex.EncodeToString(sum[:2])
	return strings.TrimRight(name[:spec.MaxLabName-len(tag)-1], "-") + "-" + tag
}

// leadingDate is a date a directory's name starts with (2020-11-18-).
var leadingDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[-_]?`)

// Write writes the lab as an nslab lab file whose from: paths are
// relative to dir (the file's directory).
func (l *Lab) Write(w io.Writer, dir string) error {
	var head strings.Builder
	fmt.Fprintf(&head, "# Imported by nslab import from %s.\n", l.From)
	if len(l.Dropped) == 0 {
		head.WriteString("# Everything of the original is carried.\n")
	} else {
		head.WriteString("# What nslab does not carry of the original:\n")
		for _, d := range l.Dropped {
			fmt.Fprintf(&head, "#   - %s\n", d)
		}
	}
	if len(l.Notes) > 0 {
		head.WriteString("# What nslab does otherwise than the original:\n")
		for _, d := range l.Notes {
			fmt.Fprintf(&head, "#   - %s\n", d)
		}
	}
	root := mapping()
	add(root, "name", scalar(l.Name))
	// Namespaces named NAME-NODE, as containerlab names its containers
	// clab-NAME-NODE: two imported labs with a node r1 each can run at once.
	add(root, "prefix", scalar(l.Name+"-"))
	nodes := mapping()
	for _, n := range l.Nodes {
		nv, err := n.yaml(dir)
		if err != nil {
			return err
		}
		add(nodes, n.Name, nv)
	}
	add(root, "nodes", nodes)
	if len(l.Links) > 0 {
		links := &yaml.Node{Kind: yaml.SequenceNode}
		for _, k := range l.Links {
			links.Content = append(links.Content, flowMap("endpoints", flowSeq(k[:]...)))
		}
		add(root, "links", links)
	}
	if len(l.Segments) > 0 {
		segs := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range l.Segments {
			m := flowMap("name", scalar(s.Name))
			add(m, "endpoints", flowSeq(s.Endpoints...))
			segs.Content = append(segs.Content, m)
		}
		add(root, "segments", segs)
	}
	if len(l.Tests) > 0 {
		tests := &yaml.Node{Kind: yaml.SequenceNode}
		for _, t := range l.Tests {
			tests.Content = append(tests.Content, t.yaml())
		}
		add(root, "tests", tests)
		root.Content[len(root.Content)-2].HeadComment = testsComment(l.CheckerFrom)
	}
	if _, err := io.WriteString(w, head.String()); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return fmt.Errorf("write the lab file: %w", err)
	}
	return enc.Close()
}

// yaml is the node's entry, from: paths relative to dir.
func (n *Node) yaml(dir string) (*yaml.Node, error) {
	m := mapping()
	if n.FRRWhy != "" {
		m.HeadComment = n.FRRWhy
	}
	if n.Forwarding {
		add(m, "forwarding", scalar("true"))
	}
	if len(n.Sysctls) > 0 {
		sc := mapping()
		for _, kv := range n.Sysctls {
			add(sc, kv[0], scalar(kv[1]))
		}
		add(m, "sysctls", sc)
	}
	if len(n.MACs) > 0 {
		ifs := mapping()
		for _, name := range sortedKeys(n.MACs) {
			add(ifs, name, flowMap("mac", scalar(n.MACs[name])))
		}
		add(m, "interfaces", ifs)
	}
	switch {
	case n.FRR && n.Quagga:
		add(m, "frr", flowMap("quagga", scalar("true")))
	case n.FRR:
		add(m, "frr", &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle})
	}
	if len(n.Files) > 0 {
		files := mapping()
		for _, f := range n.Files {
			rel, err := filepath.Rel(dir, f.From)
			if err != nil {
				return nil, fmt.Errorf("node %s: %s: %w", n.Name, f.From, err)
			}
			add(files, f.Path, flowMap("from", scalar(filepath.ToSlash(rel))))
		}
		add(m, "files", files)
	}
	if len(n.Startup) > 0 {
		st := &yaml.Node{Kind: yaml.SequenceNode}
		for _, p := range n.Startup {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return nil, fmt.Errorf("node %s: %s: %w", n.Name, p, err)
			}
			st.Content = append(st.Content, flowMap("from", scalar(filepath.ToSlash(rel))))
		}
		add(m, "startup", st)
	}
	if len(n.Exec) > 0 {
		ex := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range n.Exec {
			ex.Content = append(ex.Content, scalar(c))
		}
		add(m, "exec", ex)
	}
	if len(m.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}, nil
	}
	return m, nil
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func add(m *yaml.Node, key string, v *yaml.Node) { m.Content = append(m.Content, scalar(key), v) }

func flowMap(key string, v *yaml.Node) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	add(m, key, v)
	return m
}

func flowSeq(items ...string) *yaml.Node {
	s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, it := range items {
		s.Content = append(s.Content, scalar(it))
	}
	return s
}
