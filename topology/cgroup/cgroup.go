// Package cgroup makes, fills, reads and removes the cgroups that bound a
// lab's nodes: one per node under one per lab, under nslab's own
// (nslab/LAB/NODE), in the unified hierarchy (cgroup v2) when the kernel
// has the cpu, memory and pids controllers there, else in the v1
// hierarchies those controllers are mounted on (a hybrid host, such as one
// whose init mounts v1, keeps them there and a v2 cgroup cannot use them).
//
// A program goes into its node's cgroup as it is created, never after:
// in v2 through clone3's CLONE_INTO_CGROUP (SysProcAttr.UseCgroupFD), in
// v1 by moving the thread that forks it (a locked thread nslab discards)
// into the cgroup first, so its child starts there. Nothing here runs in
// a network namespace: cgroups are the host's.
//
// It imports nothing of nslab; the lab package records the directories
// before it makes them, so that destroy removes them after any kill.
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Controllers are the controllers a node's limits use.
var Controllers = []string{"cpu", "memory", "pids"}

// Root is the directory of nslab's cgroups in each hierarchy.
const Root = "nslab"

// Hierarchy is where the host's cgroup controllers are mounted.
type Hierarchy struct {
	// Version is 2 when the controllers are in the unified hierarchy
	// (V2), 1 when each is in a v1 hierarchy (V1 maps a controller to
	// its mount point; cpuacct, which v1 reads CPU time from, too).
	Version int
	V2      string
	V1      map[string]string
}

// Find reads /proc/self/mountinfo for the hierarchies, and says why
// limits cannot be had when they cannot.
func Find() (*Hierarchy, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	return findIn(data, func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		return string(b)
	})
}

// findIn is Find over a mountinfo's text, with controllers reading a
// cgroup2 mount's cgroup.controllers.
func findIn(mountinfo []byte, controllers func(dir string) string) (*Hierarchy, error) {
	var v2 string
	v1 := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup2":
			if v2 == "" {
				v2 = unescape(f[4])
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				if _, seen := v1[opt]; !seen {
					v1[opt] = unescape(f[4])
				}
			}
		}
	}
	if v2 != "" {
		have := strings.Fields(controllers(v2))
		if !slices.ContainsFunc(Controllers, func(c string) bool { return !slices.Contains(have, c) }) {
			return &Hierarchy{Version: 2, V2: v2}, nil
		}
	}
	var missing []string
	for _, c := range append(slices.Clone(Controllers), "cpuacct") {
		if v1[c] == "" {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return &Hierarchy{Version: 1, V1: v1}, nil
	}
	where := "no cgroup2 mount"
	if v2 != "" {
		where = fmt.Sprintf("the cgroup2 mount %s has controllers %q", v2, strings.TrimSpace(controllers(v2)))
	}
	return nil, fmt.Errorf("limits: need the cpu, memory and pids controllers in cgroup v2 (or each mounted as v1), and this host has not (%s; no v1 mount of %s): mount cgroup2 on /sys/fs/cgroup with those controllers, or remove limits: from the file", where, strings.Join(missing, ", "))
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Group is a cgroup of nslab's, by its path under each hierarchy
// (nslab/LAB or nslab/LAB/NODE).
type Group struct {
	h    *Hierarchy
	path string
}

// Lab is lab's cgroup.
func (h *Hierarchy) Lab(lab string) *Group { return &Group{h: h, path: filepath.Join(Root, lab)} }

// Node is node's cgroup in lab.
func (h *Hierarchy) Node(lab, node string) *Group {
	return &Group{h: h, path: filepath.Join(Root, lab, node)}
}

// dir is g's directory in the hierarchy of controller (v2: the one).
func (g *Group) dir(controller string) string {
	if g.h.Version == 2 {
		return filepath.Join(g.h.V2, g.path)
	}
	return filepath.Join(g.h.V1[controller], g.path)
}

// Dirs are g's directories, one per hierarchy it is in: what the state
// records, and Remove takes.
func (g *Group) Dirs() []string {
	if g.h.Version == 2 {
		return []string{g.dir("")}
	}
	var out []string
	for _, c := range append(slices.Clone(Controllers), "cpuacct") {
		if d := g.dir(c); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// write writes value to the file name of g's directory for controller.
func (g *Group) write(controller, name, value string) error {
	p := filepath.Join(g.dir(controller), name)
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	return nil
}

// read reads the file name of g's directory for controller.
func (g *Group) read(controller, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(g.dir(controller), name))
	return strings.TrimSpace(string(b)), err
}

// Make creates g and its parents that do not exist (nslab's and the
// lab's); in v2 it gives the controllers to their children, as a cgroup
// must before its children may use them. Make does not remove what it
// made when it fails: the caller has recorded g's directories, and
// removes them.
func (g *Group) Make() error {
	parts := strings.Split(g.path, "/")
	for i := range parts {
		sub := &Group{h: g.h, path: filepath.Join(parts[:i+1]...)}
		for _, d := range sub.Dirs() {
			if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("make cgroup %s: %w", d, err)
			}
		}
		if g.h.Version == 2 && i < len(parts)-1 {
			if err := sub.enable(); err != nil {
				return err
			}
		}
	}
	return nil
}

// enable gives g's children the controllers (v2), starting from the
// hierarchy's root, which nslab does not change: when the root does not
// give them, the error says how to.
func (g *Group) enable() error {
	if g.path == Root {
		root := &Group{h: g.h, path: ""}
		sub, err := root.read("", "cgroup.subtree_control")
		if err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		for _, c := range Controllers {
			if !slices.Contains(strings.Fields(sub), c) {
				return fmt.Errorf("limits: the cgroup root %s does not give its children the %s controller (cgroup.subtree_control: %q): run echo +%s > %s, or remove limits: from the file", g.h.V2, c, sub, c, filepath.Join(g.h.V2, "cgroup.subtree_control"))
			}
		}
	}
	return g.write("", "cgroup.subtree_control", "+cpu +memory +pids")
}
