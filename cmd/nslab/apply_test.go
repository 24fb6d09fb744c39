package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab/inspect"
)

// applyA and applyB are two versions of a lab: B drops A's node x1, adds
// node x2, a link, an address, a route, a file and a firewall rule.
const (
	applyA = `name: kill
nodes:
  client:
    interfaces:
      eth0: {addresses: [10.1.0.2/24]}
    routes:
      - {to: default, via: 10.1.0.1}
  r1:
    forwarding: true
    interfaces:
      eth0: {addresses: [10.1.0.1/24]}
      eth1: {addresses: [10.12.0.1/30]}
      x1: {addresses: [10.200.1.254/24]}
    routes:
      - {to: 10.2.0.0/24, via: 10.12.0.2}
  r2:
    forwarding: true
    interfaces:
      eth0: {addresses: [10.12.0.2/30]}
      eth1: {addresses: [10.2.0.1/24]}
    routes:
      - {to: 10.1.0.0/24, via: 10.12.0.1}
  server:
    interfaces:
      eth0: {addresses: [10.2.0.2/24]}
    routes:
      - {to: default, via: 10.2.0.1}
    run: ["sleep 1000"]
  x1:
    interfaces:
      e0: {addresses: [10.200.1.1/24]}
    routes:
      - {to: default, via: 10.200.1.254}
links:
  - endpoints: [client:eth0, r1:eth0]
  - endpoints: [r1:eth1, r2:eth0]
  - endpoints: [r2:eth1, server:eth0]
  - endpoints: [x1:e0, r1:x1]
`
)

// applyB is applyA edited.
func applyB() string {
	s := strings.Replace(applyA, "      x1: {addresses: [10.200.1.254/24]}\n", "", 1)
	s = s[:strings.Index(s, "  x1:\n")] + `  x2:
    interfaces:
      e0: {addresses: [10.200.2.1/24]}
    routes:
      - {to: default, via: 10.200.2.254}
    files: {/etc/motd: "x2\n"}
` + s[strings.Index(s, "links:\n"):]
	s = strings.Replace(s, "  - endpoints: [x1:e0, r1:x1]\n", "  - endpoints: [x2:e0, r2:x2]\n  - endpoints: [client:l1, server:l1]\n", 1)
	s = strings.Replace(s, "      eth1: {addresses: [10.2.0.1/24]}\n", "      eth1: {addresses: [10.2.0.1/24]}\n      x2: {addresses: [10.200.2.254/24]}\n", 1)
	s = strings.Replace(s, "      eth0: {addresses: [10.1.0.2/24]}\n", "      eth0: {addresses: [10.1.0.2/24, 10.1.0.3/24]}\n      l1: {addresses: [10.9.0.1/24]}\n", 1)
	s = strings.Replace(s, "      eth0: {addresses: [10.2.0.2/24]}\n", "      eth0: {addresses: [10.2.0.2/24]}\n      l1: {addresses: [10.9.0.2/24]}\n", 1)
	s = strings.Replace(s, "      - {to: default, via: 10.1.0.1}\n", "      - {to: default, via: 10.1.0.1}\n      - {to: 198.18.0.0/24, via: 10.9.0.2}\n", 1)
	return strings.Replace(s, "  r1:\n    forwarding: true\n", "  r1:\n    forwarding: true\n    firewall: [{drop: {proto: udp, port: 9}}]\n", 1)
}

// TestPrivilegedApplyKilled: an apply SIGKILLed at 20 random moments
// (every other one before a random step it makes, the others after a
// random delay, in its taking back too) leaves a state from which apply B
// gives B exactly (as inspect reads it, against a fresh deploy of B) or
// destroy leaves nothing. The kills before a step come half way through
// by construction (CI once drew 9 of the 20 kinds at random, and the
// delays all missed), so at least 10 must.
func TestPrivilegedApplyKilled(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t.Parallel() // sends nothing, and its kills' moments are random anyway: alongside the waiting tests
	c := newCLI(t)
	name := labtest.Name("k")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(a, labtest.Rename([]byte(applyA), name), 0o644))
	must(os.WriteFile(b, labtest.Rename([]byte(applyB()), name), 0o644))
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := c.run(args...)
		if code != 0 {
			t.Fatalf("nslab %s: %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	ok("deploy", b)
	wantB := objects(t, ok("inspect", "--name", name, "--format", "json"))
	ok("destroy", "--name", name)
	ok("deploy", a)
	wantA := objects(t, ok("inspect", "--name", name, "--format", "json"))
	_, plan, _ := c.run("apply", "--dry-run", b)
	steps := strings.Count(plan, "\n# step ")
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), 20))
	halfWay := 0
	defer func() {
		if halfWay < 10 {
			t.Errorf("only %d of the 20 kills came half way through an apply", halfWay)
		}
	}()
	for i := range 20 {
		how := killApply(t, c, b, r, steps, i%2 == 0)
		if st, err := os.ReadFile(filepath.Join(c.stateDir, name+".json")); err == nil && strings.Contains(string(st), `"applying"`) {
			how += ", half way"
			halfWay++
		}
		t.Logf("kill %d: %s", i, how)
		if i%2 == 0 {
			ok("apply", b)
			if got := objects(t, ok("inspect", "--name", name, "--format", "json")); got != wantB {
				t.Fatalf("kill %d (%s), then apply B: not B:\n%s", i, how, diffLines(wantB, got))
			}
			ok("apply", a)
			if got := objects(t, ok("inspect", "--name", name, "--format", "json")); got != wantA {
				t.Fatalf("kill %d: apply A after: not A:\n%s", i, diffLines(wantA, got))
			}
			continue
		}
		ok("destroy", "--name", name)
		if left := leftOf(t, c, name, "client", "r1", "r2", "server", "x1", "x2"); left != "" {
			t.Fatalf("kill %d (%s), then destroy: left %s", i, how, left)
		}
		if d := filepath.Join("/sys/fs/cgroup", "nslab", name); fileExists(d) {
			t.Fatalf("kill %d: cgroup %s left", i, d)
		}
		ok("deploy", a)
	}
}

// killApply starts nslab apply FILE and SIGKILLs it: before a random one
// of its steps (atStep), or after a random delay; it says which.
func killApply(t *testing.T, c *runner, file string, r *rand.Rand, steps int, atStep bool) string {
	t.Helper()
	var how string
	if atStep && steps > 0 {
		k := 1 + r.IntN(steps)
		c.env = []string{fmt.Sprintf("NSLAB_TEST_PAUSE_AT=%d", k)}
		how = fmt.Sprintf("before step %d of %d", k, steps)
	} else {
		how = fmt.Sprintf("after %v", time.Duration(r.IntN(60))*time.Millisecond)
	}
	defer func() { c.env = nil }()
	cmd := c.cmd("apply", file)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if strings.HasPrefix(how, "before") {
		buf := make([]byte, 4096)
		n, _ := pr.Read(buf) // "paused before step k", or an error
		if !strings.Contains(string(buf[:n]), "paused before step") {
			how += " (it ended first: " + strings.TrimSpace(string(buf[:n])) + ")"
		}
	} else {
		d, _ := time.ParseDuration(strings.TrimPrefix(how, "after "))
		time.Sleep(d)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	pr.Close()
	return how
}

// objects is what a lab's inspect JSON says of its objects, one per line,
// sorted: each interface (kind, peer, MAC, MTU, state, addresses,
// impairment), route, policy rule and nftables rule, and each service's
// command and state.
func objects(t *testing.T, inspectJSON string) string {
	t.Helper()
	var info inspect.LabInfo
	if err := json.Unmarshal([]byte(inspectJSON), &info); err != nil {
		t.Fatalf("inspect json: %v", err)
	}
	var out []string
	for _, n := range info.Nodes {
		for _, i := range n.Interfaces {
			addrs := slices.Clone(i.Addresses)
			slices.Sort(addrs)
			out = append(out, fmt.Sprintf("%s if %s %s peer=%s mac=%s mtu=%d %s %v %s", n.Node, i.Name, i.Kind, i.Peer, i.MAC, i.MTU, i.State, addrs, i.Impairment))
		}
		for _, r := range n.Routes {
			out = append(out, fmt.Sprintf("%s route %+v", n.Node, r))
		}
		for _, r := range n.Rules {
			out = append(out, fmt.Sprintf("%s rule %+v", n.Node, r))
		}
		if n.Netfilter != nil {
			for _, r := range n.Netfilter.Rules {
				out = append(out, fmt.Sprintf("%s nft %s %s", n.Node, r.Path, r.Rule))
			}
		}
		out = append(out, fmt.Sprintf("%s present=%v error=%q", n.Node, n.Present, n.Error))
	}
	for _, s := range info.Services {
		out = append(out, fmt.Sprintf("%s service %q running=%v", s.Node, s.Command, s.Running))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// diffLines says which lines of want and got differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestPrivilegedApplyUnderTraffic: a bench through r1 while apply adds a
// node to r2 (a new link and addresses; nothing on the path changes)
// loses nothing; a bench while apply moves r1's route to the server onto
// a new link shows the change in its failover report: the event applied,
// what it lost, and the path after it by the new link.
func TestPrivilegedApplyUnderTraffic(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	a, name := labFile(t, "two-routers.yaml")
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	withNode := strings.Replace(string(data), "links:\n", `  x:
    interfaces:
      e0: {addresses: [10.200.0.1/24]}
    routes:
      - {to: default, via: 10.200.0.254}
links:
  - endpoints: [x:e0, r2:x]
`, 1)
	withNode = strings.Replace(withNode, "      eth1: {addresses: [10.2.0.1/24]}\n", "      eth1: {addresses: [10.2.0.1/24]}\n      x: {addresses: [10.200.0.254/24]}\n", 1)
	moved := strings.Replace(withNode, "      - {to: 10.2.0.0/24, via: 10.12.0.2}\n", "      - {to: 10.2.0.0/24, via: 10.13.0.2}\n", 1)
	moved = strings.Replace(moved, "      eth1: {addresses: [10.12.0.1/30]}\n", "      eth1: {addresses: [10.12.0.1/30]}\n      eth2: {addresses: [10.13.0.1/30]}\n", 1)
	moved = strings.Replace(moved, "      eth0: {addresses: [10.12.0.2/30]}\n", "      eth0: {addresses: [10.12.0.2/30]}\n      eth2: {addresses: [10.13.0.2/30]}\n", 1)
	moved = strings.Replace(moved, "links:\n", "links:\n  - endpoints: [r1:eth2, r2:eth2]\n", 1)
	b1, b2 := filepath.Join(filepath.Dir(a), "b1.yaml"), filepath.Join(filepath.Dir(a), "b2.yaml")
	if err := os.WriteFile(b1, []byte(withNode), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b2, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, out, errOut := c.run("deploy", a); code != 0 {
		t.Fatalf("deploy: %d %s %s", code, out, errOut)
	}
	// Each bench is given the file the lab is deployed (or applied) from,
	// and applies the next under traffic.
	bench := func(from, file string) *report.Failover {
		t.Helper()
		code, out, errOut := c.run("bench", "-q", "--format", "json", "--duration", "3s", "--rate", "20kpps", "--event", "1s:apply:"+file, from)
		if code != 0 {
			t.Fatalf("bench --event apply: %d %s %s", code, out, errOut)
		}
		var rep report.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Failover == nil {
			t.Fatalf("bench --event apply: no failover report (%v):\n%s", err, out)
		}
		f := rep.Failover
		if len(f.Events) != 1 || f.Events[0].Err != "" || f.Events[0].Applied < time.Second {
			t.Fatalf("events: %+v", f.Events)
		}
		t.Logf("apply %s under traffic: %d sent, %d lost, longest gap %v; path after %v", filepath.Base(file), rep.Sent, f.Lost, f.GapOutage, f.PathAfter)
		return f
	}
	if f := bench(a, b1); f.Lost != 0 || f.Rerouted {
		t.Errorf("adding a node to r2 lost %d packets (or moved the path: %v)", f.Lost, f.PathAfter)
	}
	if _, out, _ := c.run("inspect", "--name", name); !strings.Contains(out, "10.200.0.1/24") {
		t.Errorf("the node the bench's apply added is not in the lab:\n%s", out)
	}
	f := bench(b1, b2)
	if !f.Rerouted || !strings.Contains(strings.Join(f.PathAfter, " "), "r1:eth0>eth2") {
		t.Errorf("moving r1's route did not move the path onto r1:eth2: after %v", f.PathAfter)
	}
}
