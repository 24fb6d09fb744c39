package importlab

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// labConfLine is one machine setting of lab.conf: NAME[KEY]=VALUE.
var labConfLine = regexp.MustCompile(`^([A-Za-z0-9_.-]+)\[([A-Za-z0-9_]+)\]\s*=\s*"?([^"]*)"?\s*$`)

// frrStart are the startup lines that start FRR (nslab starts it), and
// quaggaStart those that start Quagga (nslab starts FRR's daemons with
// Quagga's configuration files, which FRR reads): systemctl, service and
// the init script, as Kathara's images run them. Quagga's older images
// named its init script zebra.
var (
	frrStart    = regexp.MustCompile(`^(systemctl (re)?start frr|systemctl enable --now frr|/etc/init\.d/frr (re)?start|service frr (re)?start)(\.service)?\s*(;|$)`)
	quaggaStart = regexp.MustCompile(`^(systemctl (re)?start (quagga|zebra)|systemctl enable --now (quagga|zebra)|/etc/init\.d/(quagga|zebra) (re)?start|service (quagga|zebra) (re)?start)(\.service)?\s*(;|$)`)
)

// quaggaDirs are where Kathara's Quagga images keep Quagga's
// configuration (/etc/zebra is a link to /etc/quagga in them).
var quaggaDirs = []string{"/etc/quagga/", "/etc/zebra/"}

// Kathara reads a Kathara lab directory: lab.conf (each machine's
// interfaces on collision domains, with their MACs; its image and
// options), lab.ext, each machine's NAME.startup (its exec lines,
// shared.startup's first) and NAME/ (the files copied into it, those
// under a node's own directories as files). A collision domain of two
// interfaces becomes a link, of one or more than two a segment. A
// machine whose files configure FRR or Quagga runs FRR (see
// katharaMachines). Every machine forwards, as Kathara's do. sysctl
// options are carried; images, resource limits, bridged and port
// options, terminals, lab.ext and /shared are listed in Dropped.
func Kathara(dir string) (*Lab, error) { return KatharaWith(dir, "") }

// KatharaWith reads the Kathara lab in dir as Kathara does, its machines
// and collision domains from conf instead of dir's lab.conf ("": that
// one): a lab checker's structure, the topology an exercise asks for,
// with the startup files and machine directories of dir as the student
// has written them so far.
func KatharaWith(dir, conf string) (*Lab, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	from := "a Kathara lab (its lab.conf, startup files and machine directories)"
	if conf == "" {
		conf = filepath.Join(dir, "lab.conf")
	} else {
		from = fmt.Sprintf("a Kathara lab (its startup files and machine directories) and the topology of %s", conf)
	}
	f, err := os.Open(conf)
	if err != nil {
		return nil, fmt.Errorf("%w: a Kathara lab directory has lab.conf", err)
	}
	defer f.Close()
	l := &Lab{Name: importName(dir), From: from}
	cds := map[string][]string{}
	images := map[string][]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, "LAB_") {
			continue
		}
		m := labConfLine.FindStringSubmatch(text)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: %q is no NAME[KEY]=VALUE", conf, line, text)
		}
		name, key, value := m[1], m[2], m[3]
		n := l.Node(name)
		n.Forwarding = true
		if idx, err := strconv.Atoi(key); err == nil {
			cd, mac, _ := strings.Cut(value, "/") // "A/02:00:..:01": a collision domain and a MAC
			ifname := fmt.Sprintf("eth%d", idx)
			cds[cd] = append(cds[cd], name+":"+ifname)
			if mac != "" {
				n.setMAC(ifname, mac)
			}
			continue
		}
		if key == "image" {
			images[value] = append(images[value], name)
			continue
		}
		if err := l.option(n, key, value, fmt.Sprintf("%s[%s]=%s (lab.conf line %d)", name, key, value, line)); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", conf, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := l.katharaMachines(dir, images); err != nil {
		return nil, err
	}
	for _, img := range sortedKeys(images) {
		l.drop("image %s (%s): nslab runs the host's programs in the node's namespace", img, strings.Join(images[img], ", "))
	}
	l.domains(cds)
	if err := l.labExt(dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "shared")); err == nil {
		l.drop("shared/ (Kathara mounts it at /shared in every machine)")
	}
	return l, nil
}

// domains makes the collision domains (name: their node:interface
// endpoints) links, of two, or segments.
func (l *Lab) domains(cds map[string][]string) {
	for _, cd := range sortedKeys(cds) {
		eps := cds[cd]
		sort.Strings(eps)
		if len(eps) == 2 {
			l.Links = append(l.Links, [2]string{eps[0], eps[1]})
		} else {
			l.Segments = append(l.Segments, Segment{Name: "cd-" + regexp.MustCompile(`[^A-Za-z0-9_.-]`).ReplaceAllString(cd, "-"), Endpoints: eps})
		}
	}
}

// option carries machine n's lab.conf option key (but its image), or
// names it as not carried; where is the line, for that.
func (l *Lab) option(n *Node, key, value, where string) error {
	switch key {
	case "sysctl":
		k, v, ok := strings.Cut(value, "=")
		if !ok {
			return fmt.Errorf("sysctl %q is no KEY=VALUE", value)
		}
		n.Sysctls = append(n.Sysctls, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	case "ipv6":
		// Kathara turns IPv6 on in a machine with ipv6=True and off with
		// False; nslab turns it on only where a node may add IPv6
		// addresses of its own, which a host configured by router
		// advertisements alone does not.
		v := "1"
		if strings.EqualFold(value, "true") {
			v = "0"
		}
		n.Sysctls = append(n.Sysctls, [2]string{"net.ipv6.conf.all.disable_ipv6", v}, [2]string{"net.ipv6.conf.default.disable_ipv6", v})
	case "bridged", "port":
		l.drop("%s: a link to the host's network or a port of the host's (nslab never touches the host's own interfaces)", where)
	case "num_terms", "shell":
		l.drop("%s: the terminals Kathara opens (nslab exec NODE -- bash opens a shell in a node)", where)
	case "env":
		l.drop("%s: an environment variable of the machine's processes (set it on the exec lines that read it)", where)
	case "mem", "cpus", "ulimit":
		l.drop("%s: a resource limit of the container (a node's limits: key bounds its processes)", where)
	default:
		l.drop("%s", where)
	}
	return nil
}

// labExt names each line of lab.ext (a collision domain joined to one of
// the host's interfaces, on a VLAN of it or not) as not carried: a lab
// never touches the host's own interfaces.
func (l *Lab) labExt(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "lab.ext"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		l.drop("lab.ext line %d, %q: collision domain %s joined to the host's interface %s (nslab never touches the host's own interfaces; the domain is carried without it)", i+1, strings.TrimSpace(line), f[0], strings.Join(f[1:], " "))
	}
	return nil
}

// katharaMachines reads each machine's startup lines and files, and
// decides whether it runs FRR: when its files configure FRR or Quagga
// (a daemons file, frr.conf, or a daemon's own file) and a startup line
// or its image starts it. Files that configure routing that nothing
// starts are started too, and the lab's notes say so: Kathara's Quagga
// labs leave that to a student's first command, and a lab whose routers
// hold only their connected routes teaches nothing nslab can check.
func (l *Lab) katharaMachines(dir string, images map[string][]string) error {
	shared, err := startupLines(filepath.Join(dir, "shared.startup"))
	if err != nil {
		return err
	}
	var unstarted []string
	for _, n := range l.Nodes {
		own, err := startupLines(filepath.Join(dir, n.Name+".startup"))
		if err != nil {
			return err
		}
		// The startup files run whole, as Kathara runs them (startup:);
		// their lines that start FRR or Quagga are nslab's to start.
		for _, name := range []string{"shared.startup", n.Name + ".startup"} {
			if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() {
				n.Startup = append(n.Startup, filepath.Join(dir, name))
			}
		}
		frrLine, quaggaLine := "", ""
		for _, c := range append(append([]string(nil), shared...), own...) {
			switch {
			case frrStart.MatchString(c):
				frrLine = c
			case quaggaStart.MatchString(c):
				quaggaLine = c
			}
		}
		quagga, err := l.machineFiles(dir, n)
		if err != nil {
			return err
		}
		image := ""
		for img, names := range images {
			if slices.Contains(names, n.Name) {
				image = img
			}
		}
		if n.decideFRR(quagga, frrLine, quaggaLine, image) {
			unstarted = append(unstarted, n.Name)
		}
	}
	if len(unstarted) > 0 {
		l.note("%s: their files configure routing daemons that no startup line starts (in Kathara they run once started by hand); nslab starts them at deploy", strings.Join(unstarted, ", "))
	}
	return nil
}

// decideFRR gives node n FRR when its files configure it (or Quagga,
// quagga: the directory), and says why: a start line of FRR's or
// Quagga's, or an FRR image, starts it; unstarted: nothing does, and
// nslab will.
func (n *Node) decideFRR(quagga, frrLine, quaggaLine, image string) (unstarted bool) {
	n.FRR = n.configuresFRR()
	if !n.FRR {
		return false
	}
	what := "FRR with its /etc/frr"
	if quagga != "" {
		n.Quagga = true
		what = "its Quagga configuration (" + quagga + ") with FRR's daemons, which read it with Quagga's defaults (quagga: true)"
	}
	switch {
	case frrLine != "":
		n.FRRWhy = fmt.Sprintf("runs %s, as its startup line %q does (nslab starts it, after the other lines)", what, frrLine)
	case quaggaLine != "":
		n.FRRWhy = fmt.Sprintf("runs %s, as its startup line %q starts Quagga (nslab starts them, after the other lines)", what, quaggaLine)
	case strings.Contains(strings.ToLower(image), "frr"):
		n.FRRWhy = fmt.Sprintf("runs %s, as image %s starts it", what, image)
	default:
		n.FRRWhy = fmt.Sprintf("runs %s: no startup line starts it, and nslab does (see the notes at the top)", what)
		return true
	}
	return false
}

// configuresFRR reports whether the node's files configure FRR: a
// daemons file, frr.conf, or a daemon's own file.
func (n *Node) configuresFRR() bool {
	for _, f := range n.Files {
		dir, base := path.Split(f.Path)
		if dir == "/etc/frr/" && (base == "daemons" || base == "frr.conf" || frrDaemonConf.MatchString(base)) {
			return true
		}
	}
	return false
}

// frrDaemonConf is a routing daemon's own configuration file's name.
var frrDaemonConf = regexp.MustCompile(`^(zebra|staticd|bgpd|ospfd|ospf6d|ripd|ripngd|isisd|pimd|pim6d|ldpd|nhrpd|eigrpd|babeld|pbrd|bfdd|fabricd|vrrpd|pathd)\.conf$`)

// startupLines reads a startup file's command lines; none where it is
// missing.
func startupLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, nil
}

// machineFiles reads the files of machine n's directory. Quagga's
// configuration (quaggaDirs) goes to /etc/frr, where FRR's daemons read
// it; quagga is the directory it was in ("": none).
func (l *Lab) machineFiles(dir string, n *Node) (quagga string, err error) {
	root := filepath.Join(dir, n.Name)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return "", nil
	}
	var mapped []File
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		in := "/" + filepath.ToSlash(rel)
		for _, q := range quaggaDirs {
			rest, ok := strings.CutPrefix(in, q)
			if !ok {
				continue
			}
			if rest == "debian.conf" {
				l.drop("%s's file %s (Quagga's options for its daemons: nslab starts FRR's with its own)", n.Name, in)
				return nil
			}
			quagga = strings.TrimSuffix(q, "/")
			mapped = append(mapped, File{Path: "/etc/frr/" + rest, From: p, Was: in})
			return nil
		}
		if !ownFile(in) {
			l.drop("%s's file %s (a node's own files are under %s)", n.Name, in, strings.Join(nodeFiles, ", "))
			return nil
		}
		n.Files = append(n.Files, File{Path: in, From: p})
		return nil
	})
	for _, f := range mapped {
		if slices.ContainsFunc(n.Files, func(g File) bool { return g.Path == f.Path }) {
			l.drop("%s's file %s (its /etc/frr has a file of that name, which FRR reads)", n.Name, f.Was)
			continue
		}
		n.Files = append(n.Files, f)
	}
	return quagga, err
}
