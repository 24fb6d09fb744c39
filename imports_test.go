// The layering rules of the module, checked on every test run: the lab
// side (topology) imports nothing of the traffic side (pktgen), no
// library imports a command, the parts of topology/lab that are data
// (the plan, the state file) import only the module's packages they are
// allowed, and libraries do not print (they return results and errors;
// cmd chooses the format and where it goes).
package nslab_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/nslab/nslab"

// dataOnly are packages that are data and what compares or stores it,
// with the module's packages each may import: nothing that changes the
// machine, and nothing of the lab package above them.
var dataOnly = map[string][]string{
	"topology/lab/plan":  {},
	"topology/lab/state": {"topology/spec", "topology/sriov"},
	"pktgen/measured":    {},
}

// byProcess are packages that change the machine only through nslab's own
// verbs run as processes (the agent of a lab that spans hosts runs
// `nslab --host H VERB`, as a user on that host would), with the module's
// packages each may import: never the deployer in-process.
var byProcess = map[string][]string{
	"topology/fleet": {"topology/spec", "topology/probe", "topology/ns"},
}

// readers are the packages that read what a run measured (reports,
// plots, results files) and the programs made of them: none may depend,
// even through another package, on the deployer, netlink or nftables.
var readers = []string{"./pktgen/report", "./pktgen/bench/plot", "./cmd/nslab-plot"}

// notForReaders are the packages readers must not depend on.
var notForReaders = []string{module + "/topology/lab", "github.com/vishvananda/netlink", "github.com/google/nftables"}

// labReaders read a deployed lab (its kernels through deployed.Opened)
// and change nothing: none may depend, even through another package, on
// the deployer (topology/lab) itself.
var labReaders = []string{"./topology/lab/deployed", "./topology/check", "./topology/verify", "./pktgen/sample",
	// bench's jobs that decide from what was measured (its accounting and
	// verdict, its searches, a comparison's validity and control, a TCP
	// run's figures): the runner (pktgen/bench) deploys and measures.
	"./pktgen/bench/account", "./pktgen/bench/search", "./pktgen/bench/compare", "./pktgen/bench/tcp"}

// TestLabReadersNeedNoDeployer: the read side of a deployed lab stands
// below the deployer.
func TestLabReadersNeedNoDeployer(t *testing.T) {
	for _, r := range labReaders {
		out, err := exec.Command("go", "list", "-deps", r).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", r, err)
		}
		if slices.Contains(strings.Fields(string(out)), module+"/topology/lab") {
			t.Errorf("%s depends on the deployer (topology/lab): it reads a deployed lab through topology/lab/deployed", r)
		}
	}
}

func TestReadersNeedNoDeployer(t *testing.T) {
	for _, r := range readers {
		out, err := exec.Command("go", "list", "-deps", r).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", r, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, bad := range notForReaders {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("%s depends on %s: what it reads belongs in pktgen/measured (data, no kernel access)", r, dep)
				}
			}
		}
	}
}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		for _, imp := range imports {
			if strings.HasPrefix(pkg, module+"/topology") && strings.HasPrefix(imp, module+"/pktgen") {
				t.Errorf("%s imports %s: topology must not import pktgen (move what both need into a leaf under topology)", pkg, imp)
			}
			if !strings.HasPrefix(pkg, module+"/cmd") && strings.HasPrefix(imp, module+"/cmd") {
				t.Errorf("%s imports %s: a library must not import a command", pkg, imp)
			}
			if allowed, ok := dataOnly[strings.TrimPrefix(pkg, module+"/")]; ok && strings.HasPrefix(imp, module+"/") && !slices.Contains(allowed, strings.TrimPrefix(imp, module+"/")) {
				t.Errorf("%s imports %s: it is data (see dataOnly); move what it needs below it", pkg, imp)
			}
			if allowed, ok := byProcess[strings.TrimPrefix(pkg, module+"/")]; ok && strings.HasPrefix(imp, module+"/") && !slices.Contains(allowed, strings.TrimPrefix(imp, module+"/")) {
				t.Errorf("%s imports %s: it runs nslab's verbs as processes (see byProcess), not the library", pkg, imp)
			}
		}
	}
}

// printing is what a library must not do: write to the process's own
// standard output or error.
var printing = regexp.MustCompile(`\bfmt\.Print(f|ln)?\(|\bos\.Std(out|err)\b|(^|[^.\w])print(ln)?\(`)

func TestLibrariesDoNotPrint(t *testing.T) {
	for _, dir := range []string{"topology", "pktgen"} {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for n := 1; sc.Scan(); n++ {
				line := sc.Text()
				if strings.HasPrefix(strings.TrimSpace(line), "//") {
					continue
				}
				if printing.MatchString(line) {
					t.Errorf("%s:%d prints: %s (return it, and let cmd print)", p, n, strings.TrimSpace(line))
				}
			}
			return sc.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLayoutListsEveryPackage: docs/design/layout.md names every package
// of the module (as `path`), so that each has its one job written down.
func TestLayoutListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("docs/design/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if rel != "" && !strings.Contains(string(doc), "`"+rel+"`") {
			t.Errorf("docs/design/layout.md does not name %s: say what its one job is", rel)
		}
	}
}

// ownEnv is a library reading nslab's own environment variables, which
// only cmd reads (and passes down, as caps.Capabilities); initSets an
// init() that sets another package's variable.
var (
	ownEnv   = regexp.MustCompile(`os\.(Getenv|LookupEnv)\((env\w*|"NSLAB_\w*")\)`)
	initSets = regexp.MustCompile(`(?s)func init\(\) \{[^}]*\b[a-z]\w*\.[A-Z]\w* =`)
)

// TestSeams: below cmd/, no library reads nslab's environment variables
// and no init() sets another package's variable.
func TestSeams(t *testing.T) {
	for _, dir := range []string{"topology", "pktgen"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			data, _ := os.ReadFile(p)
			if m := ownEnv.Find(data); m != nil {
				t.Errorf("%s reads %s: nslab's environment is cmd's to read; take the value as an argument", p, m)
			}
			if m := initSets.Find(data); m != nil {
				t.Errorf("%s: an init() sets another package's variable (%s): pass the function to where it is used", p, m)
			}
			return nil
		})
	}
}
