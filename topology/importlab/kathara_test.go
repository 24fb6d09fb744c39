package importlab

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

// katharaDir writes a Kathara lab directory of files (path: text) under
// a temporary directory at rel, and returns its path.
func katharaDir(t *testing.T, rel string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), rel)
	for p, text := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// written is the lab file l writes beside dir, parsed back.
func written(t *testing.T, l *Lab, dir string) (string, *spec.Lab) {
	t.Helper()
	var buf bytes.Buffer
	if err := l.Write(&buf, dir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "nslab.yaml")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	parsed, err := spec.ReadFile(out)
	if err != nil {
		t.Fatalf("the file written does not validate: %v\n%s", err, buf.String())
	}
	return buf.String(), parsed
}

// TestKatharaQuagga: Quagga's configuration (under /etc/quagga, or
// /etc/zebra in older images) runs with FRR's daemons: its files go to
// /etc/frr, the daemons its daemons file enables run, and the line that
// starts Quagga (systemctl, service, the init script, by either name) is
// said in the node's comment (the script's shim leaves it to nslab). A node whose files configure
// routing that no line starts runs it too, and the file's head says so.
// debian.conf, Quagga's daemon options, is named as not carried.
func TestKatharaQuagga(t *testing.T) {
	quagga := func(dir string) map[string]string {
		return map[string]string{
			dir + "/daemons":    "zebra=yes\nripd=yes\nbgpd=no\n",
			dir + "/zebra.conf": "hostname z\n",
			dir + "/ripd.conf":  "router rip\n network 10.0.0.0/8\n",
		}
	}
	files := map[string]string{
		"lab.conf":   "r1[0]=A\nr2[0]=A\nr3[0]=B\nr4[0]=B\nr1[image]=kathara/quagga\n",
		"r1.startup": "ip address add 10.0.0.1/24 dev eth0\nsystemctl start quagga\n",
		"r2.startup": "ip address add 10.0.0.2/24 dev eth0\n/etc/init.d/zebra start\n",
		"r3.startup": "ip address add 10.0.1.1/24 dev eth0\n",
		"r4.startup": "ip address add 10.0.1.2/24 dev eth0\nservice quagga restart\n",
	}
	for _, dir := range []string{"r1/etc/quagga", "r2/etc/zebra", "r3/etc/quagga"} {
		for p, text := range quagga(dir) {
			files[p] = text
		}
	}
	files["r1/etc/quagga/debian.conf"] = "vtysh_enable=yes\n"
	dir := katharaDir(t, "rip", files)
	l, err := Kathara(dir)
	if err != nil {
		t.Fatal(err)
	}
	text, parsed := written(t, l, dir)
	for _, name := range []string{"r1", "r2", "r3"} {
		n := parsed.Node(name)
		if n.FRR == nil || !slices.Contains(n.FRR.Daemons, "ripd") || slices.Contains(n.FRR.Daemons, "bgpd") {
			t.Errorf("%s: frr %+v, want FRR running ripd (and not bgpd)", name, n.FRR)
		}
		if n.FileAt("/etc/frr/ripd.conf") == nil || n.FileAt("/etc/frr/zebra.conf") == nil {
			t.Errorf("%s: Quagga's files are not FRR's: %v", name, n.Files)
		}
		if n.FRR != nil && (!n.FRR.Quagga || n.FRRHead("/etc/frr/ripd.conf") != spec.QuaggaHead || n.FRRHead("/etc/frr/daemons") != "") {
			t.Errorf("%s: frr %+v: Quagga's configuration is not read with Quagga's defaults (quagga: true)", name, n.FRR)
		}
		if len(n.Startup) != 1 || n.Startup[0].From != name+".startup" {
			t.Errorf("%s: startup %+v, want its startup file, run whole", name, n.Startup)
		}
	}
	for _, want := range []string{
		`as its startup line "systemctl start quagga" starts Quagga`,
		"its Quagga configuration (/etc/zebra)",
		"frr: {quagga: true}",
		`"/etc/init.d/zebra start"`,
		"r3: their files configure routing daemons that no startup line starts",
		"r1's file /etc/quagga/debian.conf (Quagga's options for its daemons",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the file does not say %q:\n%s", want, text)
		}
	}
	// r4 starts Quagga with no configuration: no FRR (its line asks for
	// one, which the deploy says it does not run).
	if r4 := parsed.Node("r4"); r4.FRR != nil || len(r4.Startup) != 1 {
		t.Errorf("r4: frr %+v startup %+v; want its script and no FRR", r4.FRR, r4.Startup)
	}
}

// TestKatharaFRRDaemonFiles: FRR configured by its daemons file and a
// daemon's own file (no frr.conf), as Kathara's data-center labs are,
// runs FRR: the file validates (it was refused as "/etc/frr/daemons is
// FRR's" before).
func TestKatharaFRRDaemonFiles(t *testing.T) {
	dir := katharaDir(t, "kathara-lab_dc", map[string]string{
		"lab.conf":                "leaf[0]=A\nspine[0]=A\nleaf[image]=kathara/frr\nspine[image]=kathara/frr\n",
		"leaf.startup":            "ip address add 10.0.0.1/31 dev eth0\n/etc/init.d/frr start\n",
		"spine.startup":           "ip address add 10.0.0.0/31 dev eth0\n",
		"leaf/etc/frr/daemons":    "zebra=yes\nbgpd=yes\n",
		"leaf/etc/frr/bgpd.conf":  "router bgp 65001\n",
		"spine/etc/frr/daemons":   "zebra=yes\nbgpd=yes\n",
		"spine/etc/frr/bgpd.conf": "router bgp 65000\n",
	})
	l, err := Kathara(dir)
	if err != nil {
		t.Fatal(err)
	}
	text, parsed := written(t, l, dir)
	for _, name := range []string{"leaf", "spine"} {
		if n := parsed.Node(name); n.FRR == nil || !slices.Contains(n.FRR.Daemons, "bgpd") {
			t.Errorf("%s: frr %+v, want FRR running bgpd", name, n.FRR)
		}
	}
	if !strings.Contains(text, "as image kathara/frr starts it") || !strings.Contains(text, `as its startup line "/etc/init.d/frr start" does`) {
		t.Errorf("the nodes' comments do not say why they run FRR:\n%s", text)
	}
	if l.Name != "dc" {
		t.Errorf("name %q, want dc", l.Name)
	}
}

// TestKatharaCarriedOrNamed: nothing of lab.conf and lab.ext goes
// without a word: MACs and sysctls are carried, the host's interfaces
// (lab.ext, bridged), terminals and other options are named.
func TestKatharaCarriedOrNamed(t *testing.T) {
	dir := katharaDir(t, "lab", map[string]string{
		"lab.conf": "pc1[0]=A/02:42:ac:11:00:0a\npc1[1]=B\npc2[0]=A\n" +
			"pc1[sysctl]=net.ipv4.fib_multipath_hash_policy=1\npc2[ipv6]=False\n" +
			"pc1[bridged]=true\npc2[num_terms]=0\npc2[env]=X=1\npc1[ipv6]=True\n",
		"lab.ext": "B enp9s0.10\n",
	})
	l, err := Kathara(dir)
	if err != nil {
		t.Fatal(err)
	}
	text, parsed := written(t, l, dir)
	pc1 := parsed.Node("pc1")
	if i := pc1.Interface("eth0"); i == nil || i.MAC.String() != "02:42:ac:11:00:0a" || i.MACDerived {
		t.Errorf("pc1:eth0 %+v, want MAC 02:42:ac:11:00:0a from the file", i)
	}
	if !slices.ContainsFunc(pc1.Sysctls, func(s spec.Sysctl) bool { return s.Key == "net.ipv4.fib_multipath_hash_policy" && s.Value == "1" }) {
		t.Errorf("pc1's sysctls %+v lack the original's", pc1.Sysctls)
	}
	if !slices.ContainsFunc(parsed.Node("pc2").Sysctls, func(s spec.Sysctl) bool { return s.Key == "net.ipv6.conf.all.disable_ipv6" && s.Value == "1" }) {
		t.Errorf("pc2 (ipv6=False) has IPv6 on: %+v", parsed.Node("pc2").Sysctls)
	}
	// ipv6=True: on, though no line of pc1's adds an IPv6 address (router
	// advertisements give them, as in basic-ipv6).
	if !slices.ContainsFunc(pc1.Sysctls, func(s spec.Sysctl) bool { return s.Key == "net.ipv6.conf.all.disable_ipv6" && s.Value == "0" }) {
		t.Errorf("pc1 (ipv6=True) has IPv6 off: %+v", pc1.Sysctls)
	}
	for _, want := range []string{
		`lab.ext line 1, "B enp9s0.10": collision domain B joined to the host's interface enp9s0.10`,
		"pc1[bridged]=true (lab.conf line 6): a link to the host's network",
		"pc2[num_terms]=0 (lab.conf line 7): the terminals Kathara opens",
		"pc2[env]=X=1 (lab.conf line 8): an environment variable",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the file's head does not name %q:\n%s", want, text)
		}
	}
	// A directory called lab takes its parent's name.
	if want := filepath.Base(filepath.Dir(dir)); l.Name != labName(want) {
		t.Errorf("name %q, want its parent's %q", l.Name, labName(want))
	}
}

// TestImportName: readable (Kathara's prefix, a leading date and a
// directory called lab left out), at most a lab name's length, and two
// long names that begin alike apart.
func TestImportName(t *testing.T) {
	for dir, want := range map[string]string{
		"/x/frr/rip/kathara-lab_rip":                   "rip",
		"/x/exam-labs/2020-11-18-puzzle/lab":           "puzzle",
		"/x/tutorials/traffic-control/fixed-delay/lab": "fixed-delay",
		"/x/exam-labs/2020-11-05-chair/chair-01":       "chair-01",
	} {
		if got := importName(dir); got != want {
			t.Errorf("importName(%s) = %q, want %q", dir, got, want)
		}
	}
	a := importName("/x/frr/kathara-lab_bgp-multi-homed-stub")
	b := importName("/x/quagga/kathara-lab_bgp-multi-homed-stub")
	c := importName("/x/quagga/kathara-lab_bgp-multi-homed-stub-large")
	for _, n := range []string{a, b, c} {
		if len(n) > spec.MaxLabName || !strings.HasPrefix(n, "bgp-mul") {
			t.Errorf("%q: longer than a lab name, or not readable", n)
		}
	}
	if a == b || b == c || a == c {
		t.Errorf("long names that begin alike collide: %s %s %s", a, b, c)
	}
}

// TestKatharaVendoredNothingUnnamed: of every Kathara lab vendored under
// examples/imported, each machine's file, each lab.conf setting, each
// startup line and lab.ext is carried into the lab or named in what is
// not carried.
func TestKatharaVendoredNothingUnnamed(t *testing.T) {
	confs, err := filepath.Glob("../../examples/imported/*/lab.conf")
	if err != nil || len(confs) == 0 {
		t.Fatalf("no vendored Kathara lab: %v", err)
	}
	for _, conf := range confs {
		dir, _ := filepath.Abs(filepath.Dir(conf))
		l, err := Kathara(dir)
		if err != nil {
			t.Fatal(err)
		}
		dropped := strings.Join(l.Dropped, "\n")
		carried := map[string]bool{}
		for _, n := range l.Nodes {
			for _, f := range n.Files {
				carried[f.From] = true
			}
		}
		err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			node, in, ok := strings.Cut(filepath.ToSlash(rel), "/")
			if !ok || l.nodeNamed(node) == nil {
				return nil // the lab's own files (lab.conf, startups, NOTICE)
			}
			if !carried[p] && !strings.Contains(dropped, "/"+in) {
				t.Errorf("%s: %s's file /%s is neither carried nor named", filepath.Base(dir), node, in)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		text, _ := os.ReadFile(conf)
		for i, line := range strings.Split(string(text), "\n") {
			m := labConfLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			switch key := m[2]; {
			case key == "image":
				if !strings.Contains(dropped, "image "+m[3]) {
					t.Errorf("%s line %d: image %s not named", conf, i+1, m[3])
				}
			case key == "sysctl" || key == "ipv6" || strings.Trim(key, "0123456789") == "":
				// carried: a node's sysctls, an interface on its domain
			default:
				if !strings.Contains(dropped, m[1]+"["+key+"]") {
					t.Errorf("%s line %d: %s[%s] neither carried nor named", conf, i+1, m[1], key)
				}
			}
		}
		for _, n := range l.Nodes {
			// A startup file is carried whole, as a script the node runs.
			for _, name := range []string{"shared.startup", n.Name + ".startup"} {
				p := filepath.Join(dir, name)
				if _, err := os.Stat(p); err == nil && !slices.Contains(n.Startup, p) {
					t.Errorf("%s: %s's %s is not run", filepath.Base(dir), n.Name, name)
				}
			}
		}
	}
}

// TestKatharaChecker: a kathara-lab-checker configuration's ip_mapping,
// kernel_routes (a prefix, or a prefix and its next hops, an address or
// an interface; 0.0.0.0/0 as default) and reachability become tests,
// each tried for its convergence time; what no nslab test checks is
// named; and the structure it names gives the lab its topology.
func TestKatharaChecker(t *testing.T) {
	root := katharaDir(t, "ex", map[string]string{
		"lab/lab.conf":       "pc1[0]=A\nr1[0]=A\n",
		"lab/pc1.startup":    "ip address add 10.0.0.2/24 dev eth0\n",
		"solution/structure": "pc1[0]=A\nr1[0]=A\nr1[1]=B\npc2[0]=B\n",
		"solution/check.json": `{"convergence_time": 5, "structure": "solution/structure", "test": {
			"requiring_startup": ["pc1"],
			"ip_mapping": {"r1": {"1": "10.0.1.1/24", "0": "10.0.0.1/24"}},
			"kernel_routes": {"pc1": ["10.0.0.0/24", "0.0.0.0/0", ["10.0.1.0/24", ["10.0.0.1"]], ["10.0.2.0/24", ["eth0"]]]},
			"reachability": {"pc1": ["10.0.1.2"]},
			"daemons": {"r1": ["zebra"]}}}`,
	})
	lab := filepath.Join(root, "lab")
	checkers, err := FindCheckers(lab)
	if err != nil || len(checkers) != 1 {
		t.Fatalf("FindCheckers: %v %v", checkers, err)
	}
	structure, err := CheckerStructure(checkers[0])
	if err != nil || structure != filepath.Join(root, "solution", "structure") {
		t.Fatalf("CheckerStructure: %q %v", structure, err)
	}
	l, err := KatharaWith(lab, structure)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Checker(checkers[0]); err != nil {
		t.Fatal(err)
	}
	text, parsed := written(t, l, lab)
	if parsed.Node("pc2") == nil || len(parsed.Tests) != 7 {
		t.Fatalf("nodes %d, tests %d; want the structure's pc2 and 7 tests:\n%s", len(parsed.Nodes), len(parsed.Tests), text)
	}
	for _, want := range []string{
		"{address: {node: r1, interface: eth0, address: 10.0.0.1/24}, wait: 5s}",
		"{address: {node: r1, interface: eth1, address: 10.0.1.1/24}, wait: 5s}",
		"{route: {node: pc1, to: default}, wait: 5s}",
		"{route: {node: pc1, to: 10.0.1.0/24, via: 10.0.0.1}, wait: 5s}",
		"{route: {node: pc1, to: 10.0.2.0/24, dev: eth0}, wait: 5s}",
		"{reachable: pc1 -> 10.0.1.2, wait: 5s}",
		"check.json's requiring_startup",
		"check.json's test daemons: no nslab test checks it",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the lab file lacks %q:\n%s", want, text)
		}
	}
	// A configuration that is not the checker's is an error, naming it.
	bad := filepath.Join(root, "bad.json")
	os.WriteFile(bad, []byte(`{"test": {"kernel_routes": {"pc1": [["10.0.0.0/24"]]}}}`), 0o644)
	if err := l.Checker(bad); err == nil || !strings.Contains(err.Error(), "bad.json: test.kernel_routes: pc1") {
		t.Errorf("a malformed route: %v", err)
	}
}
