package verify

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/spec"
)

// fakeDaemons answers vtysh and birdc as FRR 8.4 and BIRD 2.0 print
// (a boundary double: the privileged tests ask the real daemons).
func fakeDaemons(answers map[string]string) func(string, ...string) ([]byte, error) {
	return func(node string, argv ...string) ([]byte, error) {
		key := node + " " + strings.Join(argv, " ")
		if a, ok := answers[key]; ok {
			return []byte(a), nil
		}
		return []byte("% Unknown command"), errors.New("exit status 1")
	}
}

func TestDaemonTests(t *testing.T) {
	c := &Checker{Command: fakeDaemons(map[string]string{
		"r1 vtysh -c show bgp neighbors 10.0.0.2 json":       `{"10.0.0.2":{"remoteAs":65002,"bgpState":"Established","addressFamilyInfo":{"ipv4Unicast":{"acceptedPrefixCounter":1}}}}`,
		"r1 vtysh -c show bgp neighbors 10.0.0.3 json":       `{"10.0.0.3":{"bgpState":"Active","addressFamilyInfo":{}}}`,
		"r1 vtysh -c show bgp ipv4 unicast 10.2.0.0/24 json": `{"prefix":"10.2.0.0/24","paths":[{"aspath":{"string":"65002","segments":[]},"valid":true,"bestpath":{"overall":true}}]}`,
		"r1 vtysh -c show ip ospf neighbor json":             `{"neighbors":{"10.0.0.2":[{"priority":1,"nbrState":"Full/DR","address":"10.0.0.2"}]}}`,
		"r1 vtysh -c show ipv6 ospf6 neighbor json":          `{"neighbors":[{"neighborId":"10.0.0.2","state":"ExStart"}]}`,
		"r2 birdc -s /run/bird/bird.ctl show protocols r1":   "BIRD 2.0.12 ready.\nName       Proto      Table      State  Since         Info\nr1         BGP        ---        start  21:48:40.365  Active        Socket: Connection refused\n",
	})}
	a2, a3 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	for _, x := range []struct {
		t        spec.Test
		pass     bool
		measured string
	}{
		{spec.Test{Kind: "bgp", Node: "r1", Addr: a2, Prefixes: 1}, true, "Established, 1 prefixes received"},
		{spec.Test{Kind: "bgp", Node: "r1", Addr: a2, Prefixes: 2}, false, "Established, 1 prefixes received"},
		{spec.Test{Kind: "bgp", Node: "r1", Addr: a3, Prefixes: -1}, false, "Active, 0 prefixes received"},
		{spec.Test{Kind: "bgp-route", Node: "r1", Prefix: netip.MustParsePrefix("10.2.0.0/24"), ASPath: "65002"}, true, `best path, AS path "65002"`},
		{spec.Test{Kind: "bgp-route", Node: "r1", Prefix: netip.MustParsePrefix("10.2.0.0/24"), ASPath: "65003"}, false, `AS path "65002"`},
		{spec.Test{Kind: "ospf", Node: "r1", RouterID: "10.0.0.2"}, true, "Full/DR"},
		{spec.Test{Kind: "ospf", Node: "r1", RouterID: "10.0.0.9"}, false, "FRR in r1 has no OSPF neighbour 10.0.0.9 (its neighbours: 10.0.0.2 Full/DR)"},
		{spec.Test{Kind: "ospf6", Node: "r1", RouterID: "10.0.0.2"}, false, "ExStart"},
		{spec.Test{Kind: "bird", Node: "r2", Protocol: "r1"}, false, "start (Active Socket: Connection refused)"},
	} {
		r, err := c.once(context.Background(), &x.t)
		if err != nil || r.pass != x.pass || r.measured != x.measured {
			t.Errorf("%s %s: pass %v, %q, %v; want %v, %q", x.t.Kind, x.t.Node, r.pass, r.measured, err, x.pass, x.measured)
		}
	}
	_, err := c.once(context.Background(), &spec.Test{Kind: "bgp", Node: "r9", Addr: a2})
	if err == nil || !strings.Contains(err.Error(), `vtysh -c "show bgp neighbors 10.0.0.2 json" in r9: exit status 1: % Unknown command`) {
		t.Errorf("vtysh failing: %v", err)
	}
}

// TestWaitRetries: a test that fails is tried again every Every until
// its wait is over, and passes on the try that passes.
func TestWaitRetries(t *testing.T) {
	tries := 0
	c := &Checker{Traffic: func(context.Context, *spec.Test) (Traffic, error) {
		tries++
		return Traffic{Sent: 100, Received: int64(90 + 5*tries), LossPercent: float64(10 - 5*tries)}, nil
	}}
	o := c.Check(context.Background(), &spec.Test{Kind: "traffic", Run: "r", MaxLoss: 0, Wait: time.Second, Every: 10 * time.Millisecond, Points: 2})
	if !o.Pass || o.Tries != 2 || o.Scored != 2 || o.Measured != "loss 0.000% (0 of 100)" {
		t.Errorf("%+v", o)
	}
	o = c.Check(context.Background(), &spec.Test{Kind: "traffic", Run: "r", MaxLoss: -1, MinRate: 1, Every: time.Second, Points: 2})
	if o.Pass || o.Tries != 1 || o.Scored != 0 {
		t.Errorf("no wait: one try: %+v", o)
	}
}

// TestReports: the table names each failure with what was expected and
// measured; TAP counts and marks them; JUnit XML has a case per test and
// a failure element per failed one.
func TestReports(t *testing.T) {
	res := Outcomes{
		{Name: "up", Kind: "bgp", Where: "r1 (FRR)", Pass: true, Expected: "Established", Measured: "Established", Tries: 1, Points: 1, Scored: 1},
		{Name: "route", Kind: "route", Where: "r1", Expected: "a route to 10.2.0.0/24", Measured: "no route to 10.2.0.0/24 in table main", Tries: 3, Points: 2, Took: 2 * time.Second},
		{Name: "fast", Kind: "address", Where: "r2", Pass: true, Expected: "10.0.0.1/24 on eth1", Measured: "10.0.0.1/24 on eth1", Tries: 1, Took: time.Microsecond},
	}
	var b bytes.Buffer
	res.WriteTable(&b)
	res.WriteFailures(&b)
	if !strings.Contains(b.String(), "FAIL route (r1): expected a route to 10.2.0.0/24, measured no route to 10.2.0.0/24 in table main") || res.Summary("x") != "lab x: 2 of 3 tests passed, 1 failed; 1 of 3 points" {
		t.Errorf("table:\n%s%s", b.String(), res.Summary("x"))
	}
	b.Reset()
	res.WriteTAP(&b)
	if !strings.HasPrefix(b.String(), "TAP version 13\n1..3\nok 1 - up\nnot ok 2 - route\n  ---\n") {
		t.Errorf("TAP:\n%s", b.String())
	}
	b.Reset()
	if err := res.WriteJUnit(&b, "x", time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit XML does not parse: %v\n%s", err, b.String())
	}
	s := doc.Suites[0]
	if doc.Tests != 3 || doc.Failures != 1 || s.Name != "x" || len(s.Cases) != 3 || s.Cases[0].Failure != nil || s.Cases[1].Failure == nil ||
		s.Cases[1].Failure.Message != "expected a route to 10.2.0.0/24, measured no route to 10.2.0.0/24 in table main" || s.Cases[1].Time != 2 {
		t.Errorf("JUnit: %+v", doc)
	}
	validJUnit(t, b.Bytes())
	b.Reset()
	if err := res[2:].WriteJUnit(&b, "x", time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	validJUnit(t, b.Bytes()) // a suite of 1 µs
}

// validJUnit validates doc against JUnit's XML schema as Jenkins reads it
// (testdata/junit-10.xsd) with libxml2's xmllint, after checking that
// xmllint refuses a document the schema forbids.
func validJUnit(t *testing.T, doc []byte) {
	t.Helper()
	if _, err := exec.LookPath("xmllint"); err != nil {
		if testing.Short() {
			t.Skip("xmllint (Debian's libxml2-utils, installed by make deps) is missing: the JUnit schema is checked by make test-root")
		}
		t.Fatal("xmllint is missing: make deps installs libxml2-utils")
	}
	validate := func(doc []byte) ([]byte, error) {
		f := filepath.Join(t.TempDir(), "junit.xml")
		if err := os.WriteFile(f, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command("xmllint", "--noout", "--schema", "testdata/junit-10.xsd", f).CombinedOutput()
	}
	if out, err := validate([]byte(`<testsuites><testsuite name="x" time="1e-06"/></testsuites>`)); err == nil {
		t.Fatalf("xmllint took a suite without tests, failures and errors and a time of 1e-06: %s", out)
	}
	if out, err := validate(doc); err != nil {
		t.Errorf("JUnit XML fails the schema: %v\n%s\n%s", err, out, doc)
	}
}

// TestTableFits: a table whose rows would be wider than 120 characters
// puts what was measured and expected under each row, the rows still
// aligned; one that fits keeps them in columns.
func TestTableFits(t *testing.T) {
	res := Outcomes{
		{Name: "r1's BGP session with r2 is up, r2's prefix received", Where: "r1 (FRR)", Pass: true, Expected: "Established, at least 1 prefixes", Measured: "Established, 1 prefixes received", Tries: 3, Took: 2173 * time.Millisecond},
		{Name: "r1's kernel routes h2's network to r2", Where: "r1", Pass: true, Expected: "a route to 10.2.0.0/24 via 10.0.0.2 proto bgp", Measured: "10.2.0.0/24 via 10.0.0.2 dev eth1 proto bgp", Tries: 1},
	}
	var b bytes.Buffer
	res.WriteTable(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[2], "  measured Established, 1 prefixes received; expected Established, at least 1 prefixes") {
		t.Fatalf("a wide table is not stacked:\n%s", b.String())
	}
	for _, l := range lines {
		if len(l) > 120 {
			t.Errorf("a line of %d: %s", len(l), l)
		}
	}
	if strings.Index(lines[1], "PASS") != strings.Index(lines[3], "PASS") || strings.Index(lines[0], "RESULT") != strings.Index(lines[1], "PASS") {
		t.Errorf("rows not aligned:\n%s", b.String())
	}
	b.Reset()
	res[1].Name, res[1].Expected, res[1].Measured = "route", "a route to 10.2.0.0/24", "10.2.0.0/24 via 10.0.0.2"
	res = res[1:]
	res.WriteTable(&b)
	if n := strings.Count(b.String(), "\n"); n != 2 || !strings.Contains(b.String(), "EXPECTED") {
		t.Errorf("a table that fits is stacked:\n%s", b.String())
	}
}
