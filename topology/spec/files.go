package spec

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A node's own files (files:, frr:, bird:) and its hostname. Each node has
// a view of the system of its own at deploy (a mount and a UTS namespace,
// see topology/ns): the files are written there, never on the host. Every
// text is a Go text/template over the node (see TemplateNode), rendered
// here, at validation, so a template that fails is a problem of the file.

// File is a file of a node's own tree.
type File struct {
	Path string // absolute, clean
	Text string // rendered
	Mode os.FileMode
	// From is the file the text came from, as written (relative to the
	// lab file); "" for text in the lab file.
	From string

	tmpl *source // the template, until rendered
}

// FRR is a node's FRR routing suite: the daemons nslab starts (zebra and
// staticd always, as Debian's frr package starts them) and frr.conf.
type FRR struct {
	Daemons []string // besides zebra and staticd, in file order
	Config  string   // frr.conf, rendered; "" when files: gives it
	// Quagga: the configuration is Quagga's; FRR reads it with the
	// defaults of its releases before 7.4, Quagga's (see QuaggaHead).
	Quagga bool

	tmpl *source
}

// BIRD is a node's BIRD 2 routing daemon and its bird.conf.
type BIRD struct {
	Config string // bird.conf, rendered; "" when files: gives it

	tmpl *source
}

// FRRDaemons are the daemons frr: may list (Debian's FRR 8.4 /etc/frr/daemons).
var FRRDaemons = []string{"bgpd", "ospfd", "ospf6d", "ripd", "ripngd", "isisd", "pimd", "pim6d", "ldpd", "nhrpd", "eigrpd", "babeld", "sharpd", "pbrd", "bfdd", "fabricd", "vrrpd", "pathd"}

// Paths of the routing daemons' configurations in a node. A node's own
// FRR daemons file and vtysh.conf are taken as given (nslab writes them
// where files: does not).
const (
	FRRConfPath    = "/etc/frr/frr.conf"
	FRRDaemonsPath = "/etc/frr/daemons"
	FRRVtyshPath   = "/etc/frr/vtysh.conf"
	BIRDConfPath   = "/etc/bird/bird.conf"
)

// FRRDaemonConfigs reports whether files: gives FRR its configuration
// per daemon (/etc/frr/zebra.conf, ospfd.conf, ...), as FRR's topotests
// do, rather than as one frr.conf: each daemon then reads its own at
// start.
func (n *Node) FRRDaemonConfigs() bool {
	for _, d := range append([]string{"zebra", "staticd"}, FRRDaemons...) {
		if n.FileAt("/etc/frr/"+d+".conf") != nil {
			return true
		}
	}
	return false
}

// userFRRDaemons adds the daemons a node's own /etc/frr/daemons enables
// (NAME=yes) to frr.daemons, in the file's order after those frr: lists:
// the lab runs what the original's file says. zebra and staticd always
// run; mgmtd and watchfrr are not nslab's to start (FRR 8.4 has no mgmtd,
// and nslab watches its daemons itself).
func userFRRDaemons(r *reporter, n *Node) {
	f := n.FileAt(FRRDaemonsPath)
	if n.FRR == nil || f == nil {
		return
	}
	for i, line := range strings.Split(f.Text, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(name, "#") || strings.Trim(val, `"'`) != "yes" || strings.Contains(name, "_") {
			continue
		}
		switch {
		case name == "zebra" || name == "staticd" || name == "mgmtd" || name == "watchfrr":
		case !slices.Contains(FRRDaemons, name):
			r.errf("nodes."+n.Name+".files."+FRRDaemonsPath, "line %d: unknown FRR daemon %q; one of: %s", i+1, name, strings.Join(FRRDaemons, ", "))
		case !slices.Contains(n.FRR.Daemons, name):
			n.FRR.Daemons = append(n.FRR.Daemons, name)
		}
	}
}

// privateRoots are the directories of a node's own tree: tmpfs of the
// node's own (see ns.PrivateDirs) and /etc and /var/www, overlaid (see
// ns.Overlaid).
var privateRoots = []string{"/run", "/var/run", "/var/log", "/tmp", "/etc", "/var/www"}

// source is a template's text and where it is, for messages.
type source struct {
	text     string
	path     string // field path
	line     int    // file line of the text's first line
	col      int
	fromFile string // the file it was read from; "": the lab file
}

// RunsRouting reports whether the node runs routing daemons (frr:, bird:),
// which learn routes the file does not have.
func (n *Node) RunsRouting() bool { return n.FRR != nil || n.BIRD != nil }

// FileAt is the node's file at p, or nil.
func (n *Node) FileAt(p string) *File {
	for _, f := range n.Files {
		if f.Path == p {
			return f
		}
	}
	return nil
}

// textSource is where a YAML scalar's text starts: a block scalar's text
// starts on the line after its indicator.
func textSource(v *yaml.Node, p string) *source {
	line := v.Line
	if v.Style == yaml.LiteralStyle || v.Style == yaml.FoldedStyle {
		line++
	}
	return &source{text: v.Value, path: p, line: line, col: v.Column}
}

// parseVars reads a vars: mapping (lab or node) of names to values of
// any YAML shape.
func (r *reporter) parseVars(e kv) map[string]any {
	out := map[string]any{}
	for _, ve := range r.entries(e.v, e.path, "name: value") {
		p := e.path + "." + ve.key
		r.at(p, ve.k.Line, ve.k.Column)
		if !varNameRE().MatchString(ve.key) {
			r.errf(p, "variable name %q: use letters, digits and _, starting with a letter (templates read it as .Vars.%s)", ve.key, ve.key)
			continue
		}
		var val any
		if err := ve.v.Decode(&val); err != nil {
			r.errf(p, "cannot read the value: %v", err)
			continue
		}
		out[ve.key] = val
	}
	return out
}

var varNameRE = lazyRE(`^[A-Za-z][A-Za-z0-9_]*$`)

// parseHostname reads hostname: (a host name of labels of letters, digits
// and -, at most 64 characters, as the kernel's UTS name).
func (r *reporter) parseHostname(e kv) string {
	s, ok := r.str(e.v, e.path, "a host name")
	if !ok {
		return ""
	}
	if len(s) > 64 || !hostnameRE().MatchString(s) {
		r.errf(e.path, "host name %q: use labels of letters, digits and - (not first or last) joined by dots, at most 64 characters (r1, core-1.lab)", s)
		return ""
	}
	return s
}

var hostnameRE = lazyRE(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

var fileKeys = keysOf(fileDef)

// parseFiles reads files: {PATH: TEXT | {text|from, mode}}. from is read
// relative to the lab file's directory.
func (r *reporter) parseFiles(e kv) []*File {
	var out []*File
	for _, fe := range r.entries(e.v, e.path, "path: text, or path: {from: FILE}") {
		p := e.path + "." + fe.key
		r.at(p, fe.k.Line, fe.k.Column)
		if msg := nodePathProblem(fe.key); msg != "" {
			r.errf(p, "%s", msg)
			continue
		}
		f := &File{Path: fe.key, Mode: 0o644}
		if fe.v.Kind == yaml.ScalarNode {
			if s, ok := r.str(fe.v, p, "the file's text, or {from: FILE}"); ok {
				f.tmpl = textSource(fe.v, p)
				f.tmpl.text = s
				out = append(out, f)
			}
			continue
		}
		if f.tmpl = r.parseFileMapping(fe.v, p, f); f.tmpl != nil {
			out = append(out, f)
		}
	}
	return out
}

// parseFileMapping reads {text: T} or {from: F}, with mode.
func (r *reporter) parseFileMapping(v *yaml.Node, p string, f *File) *source {
	fields := r.fields(v, p, "a file", fileKeys...)
	if m, ok := fields["mode"]; ok {
		if s, ok := r.str(m.v, m.path, "an octal mode (\"0644\")"); ok {
			mode, err := strconv.ParseUint(s, 8, 32)
			if err != nil || mode > 0o7777 {
				r.errf(m.path, "mode %q: write an octal file mode, such as \"0644\" or \"0755\"", s)
			}
			f.Mode = os.FileMode(mode)
		}
	}
	t, hasText := fields["text"]
	from, hasFrom := fields["from"]
	switch {
	case hasText && hasFrom:
		r.errf(p, "give the file's text or from:, not both")
	case hasText:
		if s, ok := r.str(t.v, t.path, "the file's text"); ok {
			src := textSource(t.v, t.path)
			src.text = s
			return src
		}
	case hasFrom:
		return r.readFrom(from, f)
	default:
		r.errf(p, "a file needs text: or from: (a file beside the lab file)")
	}
	return nil
}

// readFrom reads the file from: names, relative to the lab file.
func (r *reporter) readFrom(e kv, f *File) *source {
	name, ok := r.str(e.v, e.path, "a file name, relative to the lab file")
	if !ok {
		return nil
	}
	full := name
	if !filepath.IsAbs(name) {
		full = filepath.Join(filepath.Dir(r.file), name)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		r.errf(e.path, "cannot read %s: %v (from: is relative to the lab file's directory)", full, err)
		return nil
	}
	f.From = name
	return &source{text: string(b), path: e.path, line: 1, col: 1, fromFile: name}
}

// nodePathProblem says why p cannot be a file of a node's own tree, or "".
func nodePathProblem(p string) string {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Sprintf("file path %q: write an absolute, clean path (/etc/frr/frr.conf)", p)
	}
	for _, root := range privateRoots {
		if strings.HasPrefix(p, root+"/") {
			return ""
		}
	}
	return fmt.Sprintf("file path %q is outside the node's own directories: a node writes only under %s (the first four its own tmpfs, /etc and /var/www overlays), never on the host", p, strings.Join(privateRoots, ", "))
}

var frrKeys = keysOf(frrDef)

// parseFRR reads frr: {daemons: [...], config: TEXT}.
func (r *reporter) parseFRR(e kv) *FRR {
	f := &FRR{}
	fields := r.fields(e.v, e.path, "frr:", frrKeys...)
	if d, ok := fields["daemons"]; ok {
		items, _ := r.list(d.v, d.path, "[ospfd, bgpd]")
		for i, item := range items {
			p := fmt.Sprintf("%s[%d]", d.path, i)
			s, ok := r.str(item, p, "an FRR daemon")
			switch {
			case !ok:
			case s == "zebra" || s == "staticd":
				r.errf(p, "%s always runs with FRR: leave it out", s)
			case !slices.Contains(FRRDaemons, s):
				r.errf(p, "unknown FRR daemon %q; one of: %s", s, strings.Join(FRRDaemons, ", "))
			case slices.Contains(f.Daemons, s):
				r.errf(p, "%s is listed twice", s)
			default:
				f.Daemons = append(f.Daemons, s)
			}
		}
	}
	if c, ok := fields["config"]; ok {
		if s, ok := r.str(c.v, c.path, "frr.conf's text"); ok {
			f.tmpl = textSource(c.v, c.path)
			f.tmpl.text = s
		}
	}
	if q, ok := fields["quagga"]; ok {
		f.Quagga, _ = r.boolean(q.v, q.path, "quagga")
	}
	return f
}

// QuaggaHead is written at the head of each FRR configuration file of a
// node whose frr: says quagga: true. FRR applies the defaults of the
// release a configuration names in its frr version line; those of the
// releases before 7.4 are Quagga's: an eBGP neighbour takes and sends
// routes without a policy (7.4 made RFC 8212's policy a requirement) and
// a network statement announces its prefix without a route to it in the
// RIB (bgp network import-check). Quagga's labs rely on both.
const QuaggaHead = "! nslab: a Quagga configuration, read with the defaults of FRR before 7.4 (frr: {quagga: true})\nfrr version 7.3\n"

// FRRHead is what nslab writes before the text of the file at path in
// node n: QuaggaHead for FRR's configuration files (frr.conf and a
// daemon's own) when n's frr: says quagga: true, else nothing.
func (n *Node) FRRHead(path string) string {
	if n.FRR == nil || !n.FRR.Quagga || !frrConfigFile(path) {
		return ""
	}
	return QuaggaHead
}

// frrConfigFile reports whether path is one of FRR's configuration files:
// frr.conf or a daemon's own.
func frrConfigFile(path string) bool {
	name, ok := strings.CutPrefix(path, "/etc/frr/")
	daemon, conf := strings.CutSuffix(name, ".conf")
	return ok && conf && (daemon == "frr" || daemon == "zebra" || daemon == "staticd" || slices.Contains(FRRDaemons, daemon))
}

// FRRConfigs are the texts of node n's FRR configuration: frr: config,
// and its files that are frr.conf or a daemon's own.
func (n *Node) FRRConfigs() []string {
	if n.FRR == nil {
		return nil
	}
	var out []string
	if n.FRR.Config != "" {
		out = append(out, n.FRR.Config)
	}
	for _, f := range n.Files {
		if frrConfigFile(f.Path) {
			out = append(out, f.Text)
		}
	}
	return out
}

// parseBIRD reads bird: {config: TEXT}.
func (r *reporter) parseBIRD(e kv) *BIRD {
	b := &BIRD{}
	fields := r.fields(e.v, e.path, "bird:", keysOf(birdDef)...)
	if c, ok := fields["config"]; ok {
		if s, ok := r.str(c.v, c.path, "bird.conf's text"); ok {
			b.tmpl = textSource(c.v, c.path)
			b.tmpl.text = s
		}
	}
	return b
}

// validateRouting checks that a node's daemons have a configuration, from
// their key or from files:, and not from both.
func validateRouting(r *reporter, n *Node) {
	path := "nodes." + n.Name
	check := func(key, conf string, tmpl *source) {
		f := n.FileAt(conf)
		switch {
		case key == "frr" && tmpl == nil && f == nil && n.FRRDaemonConfigs():
			// Each daemon reads its own file, as FRR's topotests give them.
		case tmpl == nil && f == nil:
			r.errf(path+"."+key, "%s needs a configuration: give %s.config, or %s under files:", key, key, conf)
		case tmpl != nil && f != nil:
			r.errf(path+".files."+conf, "%s is given twice: by %s.config and here; keep one", conf, key)
		}
	}
	if n.FRR != nil {
		check("frr", FRRConfPath, n.FRR.tmpl)
	}
	if n.FRR == nil {
		for _, frrs := range []string{FRRDaemonsPath, FRRVtyshPath} {
			if n.FileAt(frrs) != nil {
				r.errf(path+".files."+frrs, "%s is FRR's: give the node frr: (frr: {} runs the daemons this file enables)", frrs)
			}
		}
	}
	if n.BIRD != nil {
		check("bird", BIRDConfPath, n.BIRD.tmpl)
	}
}

var tmplLine = regexp.MustCompile(`^template: [^:]*:(\d+)(?::(\d+))?: ?`)

// renderNode renders every template of node n (pure: text/template over
// the lab's model), reporting each failure at its place: the line in the
// lab file, or in the from: file.
func renderNode(r *reporter, lab *Lab, n *Node) {
	data := newTemplateNode(lab, n)
	render := func(src *source) string {
		out, err := data.render(src.text)
		if err == nil {
			return out
		}
		msg, line := err.Error(), 0
		if m := tmplLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		}
		if src.fromFile != "" {
			r.errf(src.path, "template %s:%d: %s", src.fromFile, line, msg)
		} else {
			r.errAt(src.line+max(line-1, 0), src.col, src.path, "template: %s", msg)
		}
		return ""
	}
	for _, f := range n.Files {
		f.Text = render(f.tmpl)
	}
	if n.FRR != nil && n.FRR.tmpl != nil {
		n.FRR.Config = render(n.FRR.tmpl)
	}
	if n.BIRD != nil && n.BIRD.tmpl != nil {
		n.BIRD.Config = render(n.BIRD.tmpl)
	}
}
