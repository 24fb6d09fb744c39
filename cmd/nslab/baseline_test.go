package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
)

// baselineLab is examples/rule-cost.yaml's placed lab with rules firewall
// rules that match nothing in the router, and short trials.
func baselineLab(name string, rules int, server string) string {
	var fw strings.Builder
	for i := range rules {
		fmt.Fprintf(&fw, "\n        - drop: {from: 10.99.%d.0/24}", i)
	}
	return fmt.Sprintf(`name: %[1]s
prefix: %[1]s-
nodes:
  client:
    interfaces:
      eth0: {addresses: [10.0.1.1/24]}
    routes: [{to: default, via: 10.0.1.254}]
  r1:
    forwarding: true
    cpus: [1]
    sysctls: {net.ipv4.conf.all.rp_filter: 0}
    interfaces:
      eth0: {addresses: [10.0.1.254/24]}
      eth1: {addresses: [10.0.2.254/24]}
    firewall:
      policy: accept
      rules:%[2]s
  server:
    interfaces:
      eth0: {addresses: [%[3]s/24]}
    routes: [{to: default, via: 10.0.2.254}]
links:
  - endpoints: [client:eth0, r1:eth0]
  - endpoints: [r1:eth1, server:eth0]
traffic:
  - {name: cost, from: client:eth0, to: %[3]s, frame: 64, duration: 300ms, rate: 100kpps, cpus: [0]}
`, name, fw.String(), server)
}

// TestPrivilegedBaselinePaired: a baseline keeps its lab file; the lab
// with 16 rules more (a third of the router's cost) held to it is
// measured pair by pair with the baseline's file in the same run and
// FAILs; a lab whose server moved is refused before anything is
// deployed, naming the place; the baseline's own lab with a test added
// is held to its figures, not refused.
func TestPrivilegedBaselinePaired(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	name, dir := labtest.Name("bl"), t.TempDir()
	write := func(file, text string) string {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.yaml", baselineLab(name, 1, "10.0.2.1"))
	base := filepath.Join(dir, "base.jsonl")
	if code, out, errOut := c.run("bench", "-q", "--save-baseline", base, "--repeat", "6", one); code != 0 {
		t.Fatalf("--save-baseline: code %d, %s\n%s", code, errOut, out)
	}
	if data, _ := os.ReadFile(base); !strings.Contains(string(data), `{"lab_file":{"path":"`+one) {
		t.Fatalf("the baseline keeps no lab file:\n%s", data)
	}
	more := write("more.yaml", baselineLab(name, 17, "10.0.2.1"))
	code, out, errOut := c.run("bench", "-q", "--baseline", base, more)
	if code != 1 || !strings.Contains(out, ": FAIL\n") || !strings.Contains(out, "paired: the baseline's lab file (as variant baseline: it differs in r1)") {
		t.Errorf("16 rules more: code %d, %s\n%s", code, errOut, out)
	}
	moved := write("moved.yaml", baselineLab(name, 1, "10.0.2.7"))
	code, out, errOut = c.run("bench", "-q", "--baseline", base, moved)
	if code != 2 || !strings.Contains(errOut, "was measured on another lab file: nodes.server.interfaces.eth0.addresses") {
		t.Errorf("a lab whose server moved: code %d, %s\n%s", code, errOut, out)
	}
	if netns, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(netns), name) {
		t.Errorf("a refused run deployed: %s", netns)
	}
	tested := write("tested.yaml", baselineLab(name, 1, "10.0.2.1")+"tests:\n  - reachable: client -> 10.0.2.1\n")
	code, out, errOut = c.run("bench", "-q", "--baseline", base, "--repeat", "6", tested)
	if code == 2 || !strings.Contains(out, "against baseline "+base) || strings.Contains(out, "paired:") {
		t.Errorf("the same lab with a test added: code %d, %s\n%s", code, errOut, out)
	}
}
