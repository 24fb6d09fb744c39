package corpus

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
)

// writeLabs writes Kathara labs, each a directory of files, under a
// temporary directory and returns it.
func writeLabs(t *testing.T, labs map[string]map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for lab, files := range labs {
		for name, text := range files {
			p := filepath.Join(dir, lab, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestPrivilegedRunner runs a directory of Kathara labs with the nslab
// binary: a lab that converges passes every stage, one whose startup
// file runs a program the host lacks stops at validate naming it (and
// deploys nothing), one Skip matches is not run, and the table counts
// each. cmd/nslab's TestPrivilegedVendoredKatharaLabs runs the labs
// vendored under examples/imported the same way.
func TestPrivilegedRunner(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	bin := filepath.Join(t.TempDir(), "nslab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/nslab").CombinedOutput(); err != nil {
		t.Fatalf("build nslab: %v\n%s", err, out)
	}
	dir := writeLabs(t, map[string]map[string]string{
		"two/lab": {
			"lab.conf":  "a[0]=n\nb[0]=n\n",
			"a.startup": "ip address add 10.99.0.1/24 dev eth0\n",
			"b.startup": "ip address add 10.99.0.2/24 dev eth0\n",
		},
		"missing": {
			"lab.conf":  "a[0]=n\n",
			"a.startup": "ip address add 10.99.1.1/24 dev eth0\nnslab-no-such-program --start\n",
		},
		"skipped/lab": {"lab.conf": "a[0]=n\n"},
	})
	r := Runner{NSLab: bin, Wait: 60 * time.Second, Name: func(string) string { return labtest.Name("k") }, Parallel: 2,
		Skip: regexp.MustCompile(`^skipped/`)}
	labs, err := r.Labs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(labs, []string{"missing", "two/lab"}) {
		t.Fatalf("the runner chose %v, want missing and two/lab (skipped/lab left out)", labs)
	}
	results, err := r.Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	Table(&table, results)
	t.Logf("\n%s", table.String())
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for _, x := range results {
		switch x.Dir {
		case "two/lab":
			if x.Failed != "" || !slices.Equal(x.Passed, Stages) {
				t.Errorf("%s: passed %v, failed %s: %s", x.Dir, x.Passed, x.Failed, x.Reason)
			}
		case "missing":
			if x.Failed != Validated || !x.Lacks || !slices.Equal(x.Passed, []string{Imported}) || !strings.Contains(x.Reason, "nslab-no-such-program") {
				t.Errorf("%s: passed %v, failed %s: %s; want it stopped at validate naming the program", x.Dir, x.Passed, x.Failed, x.Reason)
			}
		default:
			t.Errorf("a result for %s", x.Dir)
		}
	}
	if !strings.Contains(table.String(), "2 labs: 2 imported, 1 validated, 1 deployed, 1 converged (check with 0 broken), 1 destroyed clean") {
		t.Errorf("the table's summary does not count the two labs:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "1 refused in one line for what this machine lacks (a kernel feature or a program): 2 converged or refused only for that") {
		t.Errorf("the table does not count the lab refused for a program the machine lacks:\n%s", table.String())
	}
}
