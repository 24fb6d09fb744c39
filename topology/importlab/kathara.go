package importlab

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// labConfLine is one machine setting of lab.conf: NAME[KEY]=VALUE.
var labConfLine = regexp.MustCompile(`^([A-Za-z0-9_.-]+)\[([A-Za-z0-9_]+)\]\s*=\s*"?([^"]*)"?\s*$`)

// frrStart are the startup lines that start FRR (nslab starts it).
var frrStart = regexp.MustCompile(`^(systemctl (re)?start frr|/etc/init\.d/frr (re)?start|service frr (re)?start)\b`)

// Kathara reads a Kathara lab directory: lab.conf (each machine's
// interfaces on collision domains; its image), each machine's
// NAME.startup (its exec lines, shared.startup's first) and NAME/ (the
// files copied into it, those under a node's own directories as files).
// A collision domain of two interfaces becomes a link, of one or more
// than two a segment. A machine of an FRR image whose files give
// /etc/frr/frr.conf runs FRR (the image starts it; so do its startup
// lines that start FRR, which nslab leaves out). Every machine forwards,
// as Kathara's do. Images, resource limits, bridged and port options, and
// /shared are listed in Dropped.
func Kathara(dir string) (*Lab, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "lab.conf")
	f, err := os.Open(conf)
	if err != nil {
		return nil, fmt.Errorf("%w: a Kathara lab directory has lab.conf", err)
	}
	defer f.Close()
	l := &Lab{Name: labName(strings.TrimPrefix(filepath.Base(dir), "kathara-lab_")), From: "a Kathara lab (its lab.conf, startup files and machine directories)"}
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
			cd, _, _ := strings.Cut(value, "/") // "A/02:00:..:01": a collision domain and a MAC
			cds[cd] = append(cds[cd], fmt.Sprintf("%s:eth%d", name, idx))
			continue
		}
		switch key {
		case "image":
			images[value] = append(images[value], name)
		default:
			l.drop("%s[%s]=%s (lab.conf line %d)", name, key, value, line)
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
	for _, cd := range sortedKeys(cds) {
		eps := cds[cd]
		sort.Strings(eps)
		if len(eps) == 2 {
			l.Links = append(l.Links, [2]string{eps[0], eps[1]})
		} else {
			l.Segments = append(l.Segments, Segment{Name: "cd-" + regexp.MustCompile(`[^A-Za-z0-9_.-]`).ReplaceAllString(cd, "-"), Endpoints: eps})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "shared")); err == nil {
		l.drop("shared/ (Kathara mounts it at /shared in every machine)")
	}
	return l, nil
}

// katharaMachines reads each machine's startup lines and files.
func (l *Lab) katharaMachines(dir string, images map[string][]string) error {
	shared, err := startupLines(filepath.Join(dir, "shared.startup"))
	if err != nil {
		return err
	}
	for _, n := range l.Nodes {
		own, err := startupLines(filepath.Join(dir, n.Name+".startup"))
		if err != nil {
			return err
		}
		started := ""
		for _, c := range append(append([]string(nil), shared...), own...) {
			if frrStart.MatchString(c) {
				n.FRR, started = true, c
				continue
			}
			n.Exec = append(n.Exec, c)
		}
		if err := l.machineFiles(dir, n); err != nil {
			return err
		}
		image := ""
		for img, names := range images {
			for _, x := range names {
				if x == n.Name {
					image = img
				}
			}
		}
		hasConf := false
		for _, f := range n.Files {
			hasConf = hasConf || f.Path == "/etc/frr/frr.conf"
		}
		switch {
		case hasConf && started != "":
			n.FRRWhy = fmt.Sprintf("runs FRR with its /etc/frr, as its startup line %q does (nslab starts it, after the other lines)", started)
		case hasConf && strings.Contains(strings.ToLower(image), "frr"):
			n.FRR = true
			n.FRRWhy = fmt.Sprintf("runs FRR with its /etc/frr, as image %s starts it", image)
		case n.FRR:
			n.FRR = false
			n.Exec = append(n.Exec, started) // no configuration of its own: the line as written
		}
	}
	return nil
}

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

// machineFiles reads the files of machine n's directory.
func (l *Lab) machineFiles(dir string, n *Node) error {
	root := filepath.Join(dir, n.Name)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		in := "/" + filepath.ToSlash(rel)
		if !ownFile(in) {
			l.drop("%s's file %s (a node's own files are under %s)", n.Name, in, strings.Join(nodeFiles, ", "))
			return nil
		}
		n.Files = append(n.Files, File{Path: in, From: p})
		return nil
	})
}
