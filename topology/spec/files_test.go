package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// viewCases are the validation cases of a node's own view: hostname:,
// vars:, files:, frr:, bird: and their templates, each with where its
// problem is reported.
var viewCases = []struct {
	name, yaml string
	where      string // file:line:col: path
	msg        string
}{
	{"hostname with underscore", withA("    hostname: core_1\n"), "x.yaml:4:15: nodes.a.hostname", "labels of letters, digits and -"},
	{"hostname too long", withA("    hostname: " + strings.Repeat("a", 65) + "\n"), "x.yaml:4:15: nodes.a.hostname", "at most 64"},
	{"vars name", withA("    vars: {as-n: 1}\n"), "x.yaml:4:12: nodes.a.vars.as-n", "variable name \"as-n\""},
	{"lab vars not a mapping", "vars: [1]\n" + kbase, "x.yaml:1:7: vars", "must be a mapping"},
	{"file path relative", withA("    files: {etc/x.conf: hi}\n"), "x.yaml:4:13: nodes.a.files.etc/x.conf", "absolute, clean path"},
	{"file path unclean", withA("    files: {/etc/../usr/x: hi}\n"), "x.yaml:4:13: nodes.a.files./etc/../usr/x", "absolute, clean path"},
	{"file on the host", withA("    files: {/usr/local/bin/x: hi}\n"), "x.yaml:4:13: nodes.a.files./usr/local/bin/x", "outside the node's own directories"},
	{"file text and from", withA("    files: {/etc/x: {text: a, from: b}}\n"), "x.yaml:4:13: nodes.a.files./etc/x", "not both"},
	{"file without text", withA("    files: {/etc/x: {mode: \"0644\"}}\n"), "x.yaml:4:13: nodes.a.files./etc/x", "needs text: or from:"},
	{"file mode", withA("    files: {/etc/x: {text: a, mode: \"0999\"}}\n"), "x.yaml:4:37: nodes.a.files./etc/x.mode", "octal file mode"},
	{"file unknown key", withA("    files: {/etc/x: {txt: a}}\n"), "x.yaml:4:22: nodes.a.files./etc/x.txt", `did you mean "text"`},
	{"file from missing", withA("    files: {/etc/x: {from: no-such-file.conf}}\n"), "x.yaml:4:28: nodes.a.files./etc/x.from", "cannot read"},
	{"frr unknown daemon", withA("    frr: {daemons: [ospf], config: x}\n"), "x.yaml:4:21: nodes.a.frr.daemons[0]", "unknown FRR daemon \"ospf\""},
	{"frr zebra listed", withA("    frr: {daemons: [zebra], config: x}\n"), "x.yaml:4:21: nodes.a.frr.daemons[0]", "always runs"},
	{"frr twice", withA("    frr: {daemons: [bgpd, bgpd], config: x}\n"), "x.yaml:4:27: nodes.a.frr.daemons[1]", "listed twice"},
	{"frr without config", withA("    frr: {daemons: [bgpd]}\n"), "x.yaml:4:10: nodes.a.frr", "needs a configuration"},
	{"frr config twice", withA("    frr: {daemons: [bgpd], config: x}\n    files: {/etc/frr/frr.conf: y}\n"), "x.yaml:5:13: nodes.a.files./etc/frr/frr.conf", "given twice"},
	{"frr daemons file without frr", withA("    files: {/etc/frr/daemons: y}\n"), "x.yaml:4:13: nodes.a.files./etc/frr/daemons", "is FRR's: give the node frr:"},
	{"frr daemons file's unknown daemon", withA("    frr: {config: x}\n    files: {/etc/frr/daemons: \"ospfd=yes\\nfoo=yes\\n\"}\n"), "x.yaml:5:13: nodes.a.files./etc/frr/daemons", "line 2: unknown FRR daemon \"foo\""},
	{"bird unknown key", withA("    bird: {conf: x}\n"), "x.yaml:4:12: nodes.a.bird.conf", `did you mean "config"`},
	{"bird without config", withA("    bird: {}\n"), "x.yaml:4:11: nodes.a.bird", "needs a configuration"},
	{"template syntax", withA("    files:\n      /etc/x: |\n        line one\n        {{.Name\n"), "x.yaml:8:15: nodes.a.files./etc/x", "template: unclosed action"},
	{"template missing var", withA("    frr:\n      config: |\n        router bgp {{.Vars.asn}}\n"), "x.yaml:6:15: nodes.a.frr.config", `map has no entry for key "asn"`},
	{"template router id", withA("    bird: {config: \"router id {{.RouterID}};\"}\n"), "x.yaml:4:20: nodes.a.bird.config", "has no IPv4 address to take a router ID from"},
	{"template interface", withA("    files: {/etc/x: \"{{(.Interface \\\"e9\\\").Address}}\"}\n"), "x.yaml:4:21: nodes.a.files./etc/x", "node a has no interface e9"},
}

// TestViewRules checks each case's problem, at its file:line:col.
func TestViewRules(t *testing.T) {
	for _, c := range viewCases {
		t.Run(c.name, func(t *testing.T) { wantProblem(t, c.yaml, c.where, c.msg) })
	}
}

// TestTemplatesRender renders a node's templates over the lab: vars (the
// node's over the lab's), interfaces with their peers, the router ID,
// and a file read from beside the lab file.
func TestTemplatesRender(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.tmpl"), []byte("{{.Name}} {{.Vars.asn}} {{.Vars.area}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yml := `name: t
vars: {asn: 1, area: 0}
nodes:
  a:
    hostname: core-a
    vars: {asn: 65001}
    interfaces:
      lo: {addresses: [192.0.2.1/32]}
      e0: {addresses: [10.0.1.1/24]}
    frr:
      daemons: [bgpd]
      config: |
        hostname {{.Hostname}}
        router-id {{.RouterID}}
        {{- range .Interfaces}}{{with .Peer}}
        neighbor {{.Address.IP}} ({{.Node}}:{{.Interface}}){{end}}{{end}}
        network {{(.Interface "e0").Address.Network}}
    files:
      /etc/r.conf: {from: r.tmpl, mode: "0600"}
  b:
    interfaces:
      e0: {addresses: [10.0.1.2/24]}
links:
  - endpoints: [a:e0, b:e0]
`
	l, err := Parse(filepath.Join(dir, "lab.yaml"), []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	a := l.Node("a")
	want := "hostname core-a\nrouter-id 192.0.2.1\nneighbor 10.0.1.2 (b:e0)\nnetwork 10.0.1.0/24\n"
	if a.FRR.Config != want {
		t.Errorf("frr.conf:\n%s\nwant:\n%s", a.FRR.Config, want)
	}
	f := a.FileAt("/etc/r.conf")
	if f == nil || f.Text != "a 65001 0\n" || f.Mode != 0o600 || f.From != "r.tmpl" {
		t.Errorf("/etc/r.conf: %+v", f)
	}
	if !a.RunsRouting() || l.Node("b").RunsRouting() {
		t.Errorf("RunsRouting: a %v, b %v", a.RunsRouting(), l.Node("b").RunsRouting())
	}
	if got := l.Node("b").HostnameOrName(); got != "b" {
		t.Errorf("b's hostname %q", got)
	}
}

// TestUserFRRDaemons: a node's own /etc/frr/daemons (as FRR's examples,
// Kathara labs and containerlab binds give it) is taken: the daemons it
// enables run, after those frr: lists, and zebra, staticd, mgmtd and
// watchfrr are nslab's or not started.
func TestUserFRRDaemons(t *testing.T) {
	daemons := `zebra=yes\nbgpd=no\nospfd=yes\n# ripd=yes\nospf6d=yes\nmgmtd=yes\nospfd_options=\" -A 127.0.0.1\"\n`
	l, err := Parse("x.yaml", []byte(withA("    frr: {daemons: [bfdd], config: x}\n    files: {/etc/frr/daemons: \""+daemons+"\", /etc/frr/vtysh.conf: \"service integrated-vtysh-config\\n\"}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Node("a").FRR.Daemons, " "); got != "bfdd ospfd ospf6d" {
		t.Errorf("daemons %q, want bfdd ospfd ospf6d", got)
	}
}
