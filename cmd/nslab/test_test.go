package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
)

// crsTests are tests of client-router-server.yaml: four that hold, one
// that cannot (ns3 has no route to 10.0.1.0/24 of its own: its default
// route carries it).
const crsTests = `  - name: check
    from: ns1:veth1
    to: 10.0.2.1
    frame: 64
    count: 20000
    rate: 20kpps
tests:
  - reachable: ns1 -> ns3
  - unreachable: ns1 -> 10.9.9.9
  - route: {node: ns2, to: 10.0.2.0/24, dev: veth2, protocol: kernel}
  - neighbour: {node: ns1, address: 10.0.1.254}
  - traffic: {run: check, loss: 1%, received: 10kpps}
  - name: ns3 has a route to ns1's network
    route: {node: ns3, to: 10.0.1.0/24}
    points: 3
`

// TestPrivilegedTestVerb: nslab test deploys the lab, runs every test
// (the kernels', a traffic run's), prints each result, names the failure
// with node and value, writes JUnit XML and one JSON document, exits 1,
// and destroys the lab it deployed.
func TestPrivilegedTestVerb(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	data, _ := os.ReadFile(file)
	data, _, _ = bytes.Cut(data, []byte("# What nslab test checks")) // its own tests: instead
	os.WriteFile(file, append(data, crsTests...), 0o644)
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	junit := filepath.Join(t.TempDir(), "results.xml")
	code, out, errOut := c.run("test", "--junit", junit, file)
	if code != 1 || !strings.Contains(out, "lab "+name+": 5 of 6 tests passed, 1 failed; 5 of 8 points") ||
		!strings.Contains(out, "FAIL ns3 has a route to ns1's network (ns3): expected a route to 10.0.1.0/24, measured no route to 10.0.1.0/24 in table main") {
		t.Fatalf("test: %d\n%s\n%s", code, out, errOut)
	}
	if left := nsLeft(name, "ns1", "ns2", "ns3"); len(left) > 0 {
		t.Errorf("nslab test left the lab it deployed: %v", left)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suite    []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	raw, _ := os.ReadFile(junit)
	if err := xml.Unmarshal(raw, &doc); err != nil || doc.Tests != 6 || doc.Failures != 1 || doc.Suite[0].Cases[5].Failure == nil || doc.Suite[0].Cases[4].Failure != nil {
		t.Errorf("JUnit: %v %+v\n%s", err, doc, raw)
	}
	// The schema as Jenkins reads it (see topology/verify's TestReports).
	if out, err := exec.Command("xmllint", "--noout", "--schema", "../../topology/verify/testdata/junit-10.xsd", junit).CombinedOutput(); err != nil {
		t.Errorf("nslab test --junit fails JUnit's schema: %v\n%s", err, out)
	}
	code, out, _ = c.run("test", "--format", "json", file)
	var js struct {
		Tests []struct {
			Name, Measured string
			Pass           bool
		}
		OK bool
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != 1 || js.OK || len(js.Tests) != 6 || !js.Tests[4].Pass || !strings.Contains(js.Tests[4].Measured, " of 20000), received ") {
		t.Errorf("--format json: %d %v\n%s", code, err, out)
	}
}

// TestPrivilegedTestBGPDownUp: bgp-pair.yaml's BGP test fails while the
// link under the session is down (after the hold time), naming node and
// state, and passes within its wait once the link is back.
func TestPrivilegedTestBGPDownUp(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // waits on BGP's timers: alongside the other waiting tests
	c := newCLI(t)
	file, name := routingLab(t, "bgp-pair.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	// BIRD waits a minute after an error before it connects again: a
	// second here, so that the session comes back within the test's wait.
	data, _ := os.ReadFile(file)
	os.WriteFile(file, []byte(strings.Replace(string(data), "connect retry time 1;", "connect retry time 1; error wait time 1, 2;", 1)), 0o644)
	if code, out, errOut := c.run("test", "--keep", file); code != 0 || !strings.Contains(out, "5 of 5 tests passed") {
		t.Fatalf("test: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := c.run("link", "down", name+":r1:eth1"); code != 0 {
		t.Fatalf("link down: %s %s", out, errOut)
	}
	time.Sleep(4 * time.Second) // the session's hold time is 3 s
	data, _ = os.ReadFile(file)
	short := filepath.Join(t.TempDir(), filepath.Base(file))
	os.WriteFile(short, []byte(strings.ReplaceAll(string(data), "wait: 30s", "wait: 3s")), 0o644)
	code, out, errOut := c.run("test", short)
	if code != 1 || !strings.Contains(out, "FAIL r1's BGP session with r2 is up, r2's prefix received (r1 (FRR)): expected Established, at least 1 prefixes, measured ") || strings.Contains(out, "measured Established") {
		t.Fatalf("test with the link down: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := c.run("link", "up", name+":r1:eth1"); code != 0 {
		t.Fatalf("link up: %s %s", out, errOut)
	}
	if code, out, errOut := c.run("test", file); code != 0 || !strings.Contains(out, "5 of 5 tests passed") {
		t.Fatalf("test with the link back: %d\n%s\n%s", code, out, errOut)
	}
}

// TestPrivilegedExercises: each exercise's submissions graded to the
// CSV its expected.csv gives (the correct one full marks, each broken
// one losing exactly the points of the test that catches its mistake),
// and no lab left behind.
func TestPrivilegedExercises(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // mostly waits on OSPF: alongside the other waiting tests
	c := newCLI(t)
	for _, ex := range []string{"static-routing", "ospf", "nat-firewall"} {
		dir, lab := exercise(t, ex)
		code, out, errOut := c.run("test", "--grade", filepath.Join(dir, "submissions"), "--csv", filepath.Join(dir, "lab.yaml"))
		want, _ := os.ReadFile(filepath.Join(dir, "expected.csv"))
		if code != 0 || withoutLabColumns(t, out) != string(want) {
			t.Errorf("%s: %d\n%s\nwant\n%s\n%s", ex, code, out, want, errOut)
		}
		if _, out, _ := c.run("inspect"); strings.Contains(out, lab) {
			t.Errorf("%s: lab %s left: %s", ex, lab, out)
		}
	}
}

// TestPrivilegedGradeSix: six submissions graded in one command give the
// scores one nslab test --grade each gives, each on a fresh lab of its
// own: the same CSV (but the fresh labs' names) with nothing deployed,
// with the teacher's reference lab deployed under the exercise's name,
// and with one submission kept from an earlier grading, both of which are
// left as they were.
func TestPrivilegedGradeSix(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	dir, lab := exercise(t, "static-routing")
	teacher := filepath.Join(dir, "lab.yaml")
	subs := t.TempDir()
	var names []string
	for _, s := range []string{"correct", "default-route", "no-forwarding"} {
		for _, k := range []string{"a", "b"} {
			data, _ := os.ReadFile(filepath.Join(dir, "submissions", s, "lab.yaml"))
			os.WriteFile(filepath.Join(subs, s+"-"+k+".yaml"), data, 0o644)
			names = append(names, s+"-"+k+".yaml")
		}
	}
	var singles []string
	for _, n := range []string{names[0], names[5]} {
		_, out, _ := c.run("test", "--grade", filepath.Join(subs, n), "--format", "json", teacher)
		var js struct{ Summary string }
		json.Unmarshal([]byte(out), &js)
		singles = append(singles, js.Summary)
	}
	if !strings.Contains(singles[0], "6 of 6 points") || !strings.Contains(singles[1], "4 of 6 points") {
		t.Errorf("one at a time: %q", singles)
	}
	grade := func(when string) string {
		t.Helper()
		code, out, errOut := c.run("test", "--grade", subs, "--csv", teacher)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 7 || !strings.HasPrefix(lines[1], "correct-a.yaml,1,1,1,1,2,6,6,grade-") || !strings.HasPrefix(lines[4], "default-route-b.yaml,1,1,0,1,2,5,6,grade-") {
			t.Fatalf("grade %s: %d\n%s\n%s", when, code, out, errOut)
		}
		return freshNames.ReplaceAllString(out, "grade-LAB")
	}
	alone := grade("with nothing deployed")
	if _, out, _ := c.run("inspect"); strings.Contains(out, lab) || strings.Contains(out, "grade-") {
		t.Errorf("labs left: %s", out)
	}

	// The teacher's reference lab deployed under the exercise's name: every
	// submission is still graded on a fresh lab, and the reference lab is
	// left as it was.
	t.Cleanup(func() { c.run("destroy", "--name", lab) })
	if code, out, errOut := c.run("deploy", teacher); code != 0 {
		t.Fatalf("deploy the reference lab: %d %s %s", code, out, errOut)
	}
	before := inspectJSON(t, c, lab)
	if got := grade("beside the reference lab"); got != alone {
		t.Errorf("graded beside the reference lab:\n%s\nwith nothing deployed:\n%s", got, alone)
	}
	if after := inspectJSON(t, c, lab); after != before {
		t.Errorf("grading changed the reference lab:\nbefore %s\nafter  %s", before, after)
	}
	c.run("destroy", "--name", lab)

	// One submission kept (--keep) from an earlier grading: the others are
	// not graded on it, and it stays as it was.
	code, out, errOut := c.run("test", "--grade", filepath.Join(subs, names[5]), "--keep", teacher)
	kept := freshNames.FindString(out + errOut)
	if kept == "" {
		_, list, _ := c.run("inspect")
		kept = freshNames.FindString(list)
	}
	if kept == "" {
		t.Fatalf("test --grade --keep kept no lab: %d %s %s", code, out, errOut)
	}
	t.Cleanup(func() { c.run("destroy", "--name", kept) })
	before = inspectJSON(t, c, kept)
	if got := grade("beside a kept submission"); got != alone {
		t.Errorf("graded beside a kept submission:\n%s\nwith nothing deployed:\n%s", got, alone)
	}
	if after := inspectJSON(t, c, kept); after != before {
		t.Errorf("grading changed the kept submission's lab:\nbefore %s\nafter  %s", before, after)
	}
}

// withoutLabColumns is a grading CSV without its lab and sha256 columns
// (the fresh lab each submission was tested on, random, and its file's
// hash): the scores alone, as an exercise's expected.csv has them.
func withoutLabColumns(t *testing.T, text string) string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("not a CSV (%v):\n%s", err, text)
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, r := range rows {
		var keep []string
		for i, v := range r {
			if rows[0][i] != "lab" && rows[0][i] != "sha256" {
				keep = append(keep, v)
			}
		}
		w.Write(keep)
	}
	w.Flush()
	return b.String()
}

// freshNames are the names grading gives the labs it tests submissions on.
var freshNames = regexp.MustCompile(`grade-[0-9a-f]{6}`)

// inspectJSON is nslab inspect's JSON of lab name: what a test compares
// before and after to see it left alone.
func inspectJSON(t *testing.T, c *runner, name string) string {
	t.Helper()
	code, out, errOut := c.run("inspect", "--name", name, "--format", "json")
	if code != 0 {
		t.Fatalf("inspect %s: %d %s %s", name, code, out, errOut)
	}
	return out
}

// exercise is a copy of examples/exercises/NAME whose lab files (the
// teacher's and the submissions') name one random lab, with a prefix,
// and that name.
func exercise(t *testing.T, name string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("../../examples/exercises", name))); err != nil {
		t.Fatal(err)
	}
	lab := labtest.Name("x")
	files, _ := filepath.Glob(filepath.Join(dir, "submissions", "*", "lab.yaml"))
	for _, f := range append(files, filepath.Join(dir, "lab.yaml")) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, labtest.Rename(data, lab), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, lab
}
