package lab

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// Each node's own view of the system (see ns.View): its hostname, its
// /etc/hosts naming every node of the lab, its files:, and what its
// routing daemons need, in a mount and a UTS namespace held under
// STATE/views/LAB/NODE.{mnt,uts}. Destroy unmounts them with the lab.

// viewsDir is the directory of every lab's views; it is a private mount
// while it holds any (see ns.Bind).
func (m *Manager) viewsDir() string { return filepath.Join(m.stateDir(), "views") }

// labViews is lab labName's directory of views.
func (m *Manager) labViews(labName string) string { return filepath.Join(m.viewsDir(), labName) }

func viewSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	hosts := []byte(hostsFile(l)) // one for all: it names every node
	for _, n := range l.Nodes {
		setup := viewSetup(n)
		steps = append(steps, Step{
			Name:  fmt.Sprintf("give node %s its own view (hostname %s, /etc/hosts, %d files)", n.Name, setup.Hostname, len(setup.Files)),
			Shell: func() []string { return shView(l, n, withHosts(setup, hosts)) },
			Do:    func(d *deployer) error { return d.awaitView(n, setup, hosts) },
			Ahead: func(d *deployer) { d.views.ahead(d, n, setup, hosts) },
			// The lab's hosts file is apart: apply writes it again
			// in place when a node comes or goes (see apply.go).
			Key:   "view " + n.Name + "\n" + strings.Join(shView(l, n, withoutRoutingConfig(setup)), "\n"),
			Makes: []string{n.Name + "/view"},
			Needs: []string{n.Name},
			Undo:  func(d *deployer) error { return d.removeView(n.Name) },
		})
	}
	return steps
}

// makeView makes node n's view and holds it under the lab's views. The
// lab's hosts file is written once, in the lab's directory, and shared
// read-only by every view.
func (d *deployer) makeView(n *spec.Node, setup ns.ViewSetup, hosts []byte) error {
	if d.views.maker == nil {
		d.views.maker = ns.NewViewMaker()
	}
	p := filepath.Join(d.m.stateDir(), d.lab.Name, "hosts")
	if d.hosts == "" {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("lab directory: %w", err)
		}
		if err := os.WriteFile(p, hosts, 0o644); err != nil {
			return fmt.Errorf("the lab's hosts file: %w", err)
		}
		d.hosts = p
	}
	setup.Shared = []ns.ViewShared{{Path: "/etc/hosts", Source: p}}
	return d.inNS(n.Name, func(x *ns.NS) error {
		return d.views.maker.MakeAndBind(d.m.labViews(d.lab.Name), x, setup)
	})
}

// viewSetup is what node n's view holds besides the lab's /etc/hosts:
// /etc/hostname, the routing daemons' directories and files, and the
// node's files: (last, so they win where they name the same path).
func viewSetup(n *spec.Node) ns.ViewSetup {
	host := n.HostnameOrName()
	s := ns.ViewSetup{Hostname: host, Files: []ns.ViewFile{
		{Path: "/etc/hostname", Data: []byte(host + "\n"), Mode: 0o644},
	}}
	if n.FRR != nil {
		addFRR(&s, n)
	}
	if n.BIRD != nil {
		addBIRD(&s, n.BIRD)
	}
	for _, f := range n.Files {
		s.Files = append(s.Files, ns.ViewFile{Path: f.Path, Data: []byte(n.FRRHead(f.Path) + f.Text), Mode: f.Mode})
		for _, d := range ns.Overlaid {
			if strings.HasPrefix(f.Path, d+"/") && !slices.Contains(s.Overlays, d) {
				s.Overlays = append(s.Overlays, d)
			}
		}
	}
	return s
}

// hostsFile names every node of the lab by each of its addresses, node by
// node in file order (so getent hosts NODE gives its first address), each
// address also as NODE-IF.
func hostsFile(l *spec.Lab) string {
	var b strings.Builder
	b.WriteString("# written by nslab for lab " + l.Name + "\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, n := range l.Nodes {
		name := n.HostnameOrName()
		for _, i := range n.Interfaces {
			for _, a := range i.Addresses {
				if a.Addr().IsLoopback() {
					continue
				}
				fmt.Fprintf(&b, "%s\t%s %s-%s\n", a.Addr(), name, name, i.Name)
			}
		}
		for _, br := range n.Bridges {
			for _, a := range br.Addresses {
				fmt.Fprintf(&b, "%s\t%s %s-%s\n", a.Addr(), name, name, br.Name)
			}
		}
	}
	return b.String()
}

// ids looks up a user and group of the routing packages (frr, bird), or
// root when they are missing (the deploy's start then fails with the
// package named). A variable: the golden plans' test gives it a fixed
// user database, since the ids differ from machine to machine.
var ids = lookupIDs

func lookupIDs(name string) (int, int) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

// FRRDaemonsFile is the /etc/frr/daemons nslab writes for f (see
// frrDaemonsFile): what an export binds into an FRR container.
func FRRDaemonsFile(f *spec.FRR) string { return frrDaemonsFile(f) }

// frrDaemonsFile is /etc/frr/daemons for f, in Debian's format: every
// daemon named, yes for those that run, with Debian's options (vty on
// loopback only, so nodes do not listen on each other's addresses).
func frrDaemonsFile(f *spec.FRR) string {
	var b strings.Builder
	b.WriteString("# written by nslab from frr.daemons\n")
	for _, d := range spec.FRRDaemons {
		on := "no"
		for _, x := range f.Daemons {
			if x == d {
				on = "yes"
			}
		}
		fmt.Fprintf(&b, "%s=%s\n", d, on)
	}
	b.WriteString("vtysh_enable=yes\n")
	b.WriteString("zebra_options=\" -A 127.0.0.1 -s 90000000\"\n")
	for _, d := range append([]string{"staticd"}, spec.FRRDaemons...) {
		addr := "127.0.0.1"
		if strings.HasSuffix(d, "6d") || d == "ripngd" {
			addr = "::1"
		}
		fmt.Fprintf(&b, "%s_options=\" -A %s\"\n", d, addr)
	}
	return b.String()
}

// addFRR adds FRR's files and directories: /etc/frr/daemons and
// vtysh.conf (integrated configuration), frr.conf when frr.config gives
// it, and /var/run/frr and /var/log/frr owned by frr.
func addFRR(s *ns.ViewSetup, n *spec.Node) {
	f := n.FRR
	uid, gid := ids("frr")
	s.Dirs = append(s.Dirs,
		ns.ViewDir{Path: "/etc/frr", Mode: 0o755, UID: uid, GID: gid},
		ns.ViewDir{Path: "/run/frr", Mode: 0o755, UID: uid, GID: gid},
		ns.ViewDir{Path: "/var/log/frr", Mode: 0o755, UID: uid, GID: gid})
	// The node's own daemons file and vtysh.conf, where files: gives
	// them, are written with its files, as given.
	if n.FileAt(spec.FRRDaemonsPath) == nil {
		s.Files = append(s.Files, ns.ViewFile{Path: spec.FRRDaemonsPath, Data: []byte(frrDaemonsFile(f)), Mode: 0o640, UID: uid, GID: gid})
	}
	if n.FileAt(spec.FRRVtyshPath) == nil {
		s.Files = append(s.Files, ns.ViewFile{Path: spec.FRRVtyshPath, Data: []byte("service integrated-vtysh-config\n"), Mode: 0o640, UID: uid, GID: gid})
	}
	if f.Config == "" && n.FileAt(spec.FRRConfPath) == nil && n.FRRDaemonConfigs() {
		// A daemon reads its own file only where there is no frr.conf:
		// the host's (Debian's default) must not show.
		s.Hidden = append(s.Hidden, spec.FRRConfPath)
	}
	if f.Config != "" {
		s.Files = append(s.Files, ns.ViewFile{Path: spec.FRRConfPath, Data: []byte(n.FRRHead(spec.FRRConfPath) + f.Config), Mode: 0o640, UID: uid, GID: gid})
	}
}

// addBIRD adds bird.conf when bird.config gives it, and /run/bird.
func addBIRD(s *ns.ViewSetup, b *spec.BIRD) {
	uid, gid := ids("bird")
	s.Dirs = append(s.Dirs,
		ns.ViewDir{Path: "/etc/bird", Mode: 0o755, UID: uid, GID: gid},
		ns.ViewDir{Path: "/run/bird", Mode: 0o775, UID: uid, GID: gid})
	if b.Config != "" {
		s.Files = append(s.Files, ns.ViewFile{Path: spec.BIRDConfPath, Data: []byte(b.Config), Mode: 0o640, UID: uid, GID: gid})
	}
}

// shView is the view as shell lines: unshare(1) holds the namespaces in
// files (which must be on a private mount), from nsenter in the node's
// network namespace (ip netns exec would make a mount namespace of its own,
// from which unshare's bind mounts would not reach the host); the script's
// view_up retries it on each CPU, as ns.ViewMaker.MakeAndBind does.
func shView(l *spec.Lab, n *spec.Node, s ns.ViewSetup) []string {
	views := filepath.Join(DefaultStateDir, "views")
	dir := filepath.Join(views, l.Name)
	mnt, uts := ns.ViewPaths(dir, l.Namespace(n.Name))
	var in []string
	// As nslab's base: nothing of the host's under the private
	// directories (its /run/netns mounts among them). A lazy unmount
	// takes a mount's whole subtree, so each directory is one umount
	// (and /run's two where /run itself is no mount), not one per
	// namespace of the machine.
	in = append(in, "for m in /run/netns /run/nslab/views /run /tmp /var/log /var/run; do umount -l \"$m\" 2>/dev/null || true; done",
		"umount -l /sys && mount -t sysfs sysfs /sys",
		"mount -t tmpfs -o mode=0700 nslab-view /run && mkdir /run/upper /run/work /run/dirs",
		"mount -t overlay -o lowerdir=/etc,upperdir=/run/upper,workdir=/run/work nslab-etc /etc")
	// One tmpfs for the view, each private directory a directory of it
	// bound in place (those the machine has, as nslab), /run last.
	for _, d := range []string{"/var/log", "/tmp", "/var/run", "/run"} {
		mode := "0755"
		if d == "/tmp" {
			mode = "1777"
		}
		own := "/run/dirs/" + strings.ReplaceAll(strings.TrimPrefix(d, "/"), "/", "_")
		in = append(in, fmt.Sprintf("if [ -d %s ] && [ ! -L %s ]; then mkdir -m %s %s && mount --bind %s %s; fi", d, d, mode, own, own, d))
	}
	for _, root := range viewRoots(s) { // as nslab: never through to the host
		in = append(in, fmt.Sprintf("awk '$5 == \"%s\" {m = 1} END {exit !m}' /proc/self/mountinfo || [ -L %s ] || { echo 'this machine has no %s: the node has none of its own' >&2; exit 1; }", root, root, root))
	}
	for _, d := range s.Dirs {
		in = append(in, fmt.Sprintf("mkdir -p %s && chmod %o %s && chown %d:%d %s", d.Path, d.Mode, d.Path, d.UID, d.GID, d.Path))
	}
	for _, f := range s.Files {
		in = append(in, fmt.Sprintf("mkdir -p %s && rm -f %s && printf %%s %s > %s && chmod %o %s && chown %d:%d %s",
			filepath.Dir(f.Path), f.Path, ShellQuote(string(f.Data)), f.Path, f.Mode, f.Path, f.UID, f.GID, f.Path))
	}
	for _, p := range s.Hidden {
		in = append(in, "rm -f "+p)
	}
	in = append(in, "for f in /etc/netns/"+l.Namespace(n.Name)+"/*; do [ -e \"$f\" ] && mount --bind \"$f\" /etc/\"${f##*/}\"; done; true",
		"hostname "+ShellQuote(s.Hostname))
	return []string{
		fmt.Sprintf("mkdir -p %s && { mount --make-private %s 2>/dev/null || { mount -t tmpfs -o mode=0755,nosuid,nodev,noexec nslab-views %s && mount --make-private %s; }; } && mkdir -p %s", views, views, views, views, dir),
		fmt.Sprintf("touch %s %s", mnt, uts),
		fmt.Sprintf("view_up %s %s %s %s", l.Namespace(n.Name), mnt, uts, ShellQuote(strings.Join(in, "\n"))),
	}
}

// removeViews unmounts lab labName's views (see ns.RemoveViews).
func (m *Manager) removeViews(labName string) error {
	if _, err := os.Stat(m.viewsDir()); os.IsNotExist(err) {
		return nil
	}
	return ns.RemoveViews(m.viewsDir(), m.labViews(labName))
}

// openView opens node's view in lab labName; nil, nil when it has none
// yet (a step of a deploy before the node's view step).
func (m *Manager) openView(labName, nsName string) (*ns.View, error) {
	v, err := ns.OpenView(m.labViews(labName), nsName)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return v, err
}

// viewRoots are the node's own directories that setup writes in.
func viewRoots(s ns.ViewSetup) []string {
	var out []string
	add := func(p string) {
		for _, r := range append(append([]string{ns.Etc}, ns.PrivateDirs...), "/var/run") {
			if strings.HasPrefix(p, r+"/") && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	for _, d := range s.Dirs {
		add(d.Path)
	}
	for _, f := range s.Files {
		add(f.Path)
	}
	return out
}

// withHosts is setup with the lab's hosts file written as a file of its
// own, as the deploy script writes it (nslab shares one; see makeView).
func withHosts(setup ns.ViewSetup, hosts []byte) ns.ViewSetup {
	setup.Files = append([]ns.ViewFile{{Path: "/etc/hosts", Data: hosts, Mode: 0o644}}, setup.Files...)
	return setup
}

// withoutRoutingConfig is setup without the text of the routing daemons'
// configuration (frr.conf, bird.conf): what apply compares views by, as
// the daemons' steps carry that text and reload it.
func withoutRoutingConfig(s ns.ViewSetup) ns.ViewSetup {
	out := s
	out.Files = slices.Clone(s.Files)
	for i, f := range out.Files {
		if f.Path == spec.FRRConfPath || f.Path == spec.BIRDConfPath {
			out.Files[i].Data = nil
		}
	}
	return out
}
