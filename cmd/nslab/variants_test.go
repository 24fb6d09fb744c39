package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
)

// TestPrivilegedVariantsKilled: bench --variants through the NAT example
// (its variants nat, as deployed, and plain, without NAT and firewall; a
// duet, so a twin lab is deployed beside it), killed with SIGKILL at
// random moments. After each kill, the next bench without variants gives
// the lab back as deployed (its NAT rules back, the state without a
// variant) before it measures, and destroy leaves nothing, the twin a
// killed duet left included.
func TestPrivilegedVariantsKilled(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "nat-router.yaml")
	variants := []string{"bench", "-q", "--variants", "nat,plain", "--repeat", "6", "--duration", "200ms", file}
	if code, out, errOut := c.run("deploy", file); code != 0 {
		t.Fatalf("deploy: %d %s %s", code, out, errOut)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) }) // a test that stops early leaves nothing either
	t0 := time.Now()
	code, out, errOut := c.run(variants...)
	took := time.Since(t0)
	if code != 0 || !strings.Contains(out, "variant plain against variant nat:") {
		t.Fatalf("bench --variants: %d %s %s", code, out, errOut)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	left := 0
	for kill := range 3 {
		cmd := c.cmd(variants...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(took))))
		cmd.Process.Kill()
		cmd.Wait()
		state, _ := os.ReadFile(filepath.Join(c.stateDir, name+".json"))
		if strings.Contains(string(state), `"variant": {`) {
			left++
		}
		code, _, errOut := c.run("bench", "-q", "--duration", "200ms", file)
		if code != 0 {
			t.Fatalf("kill %d: bench after: %d %s", kill, code, errOut)
		}
		state, _ = os.ReadFile(filepath.Join(c.stateDir, name+".json"))
		if strings.Contains(string(state), `"variant": {`) {
			t.Errorf("kill %d: the state still has a variant after a bench without variants", kill)
		}
		if code, out, errOut := c.run("inspect", "--name", name); code != 0 || !strings.Contains(out, "nodes.gw.nat[0]") || !strings.Contains(out, "nodes.gw.firewall.rules[0]") {
			t.Errorf("kill %d: gw's NAT and firewall are not as deployed: %d %s %s", kill, code, out, errOut)
		}
	}
	t.Logf("3 kills within %v (a full variant run); %d left a variant applied, which the next bench undid", took, left)
	cmd := c.cmd(variants...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(took / 2)
	cmd.Process.Kill()
	cmd.Wait()
	if code, out, errOut := c.run("destroy", "--name", name); code != 0 {
		t.Fatalf("destroy after a kill: %d %s %s", code, out, errOut)
	}
	if ns := append(nsLeft(name, "lan", "gw", "wan"), nsLeft(name+"-d", "lan", "gw", "wan")...); len(ns) > 0 {
		t.Errorf("namespaces left: %v", ns)
	}
	if files, _ := filepath.Glob(filepath.Join(c.stateDir, name+"*")); len(files) > 0 {
		t.Errorf("state left: %v", files)
	}
}
