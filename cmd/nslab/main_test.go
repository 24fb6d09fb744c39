package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/rootless"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// TestMain lets the test binary act as the nslab command, so CLI tests run
// the real main path in a subprocess (exit codes, signals, exec).
func TestMain(m *testing.M) {
	if rootless.Holding(os.LookupEnv) { // the test binary is the rootless holder too
		os.Exit(hold())
	}
	if os.Getenv("NSLAB_RUN_MAIN") == "1" {
		if k, err := strconv.Atoi(os.Getenv("NSLAB_TEST_PAUSE_AT")); err == nil {
			beforeStep = pauseAt(k)
		}
		os.Exit(run(os.Args))
	}
	os.Exit(m.Run())
}

// pauseAt is the test seam behind NSLAB_TEST_PAUSE_AT=k (in this test
// binary only): deploy stops before step k (1-based), says so on stderr and
// waits for a signal, so tests can kill or interrupt a deploy in progress
// at a known point.
func pauseAt(k int) func(ctx context.Context, i int, s lab.Step) error {
	return func(ctx context.Context, i int, s lab.Step) error {
		if i+1 != k {
			return nil
		}
		fmt.Fprintf(os.Stderr, "paused before step %d: %s\n", k, s.Name)
		<-ctx.Done()
		return ctx.Err()
	}
}

// runner is one test's nslab: a private state directory and a lab file.
type runner struct {
	t        *testing.T
	bin      string
	stateDir string
	env      []string
	nobody   bool     // run as user nobody (see asNobody)
	wrap     []string // a command nslab runs under, such as ip netns exec HOST
}

// asNobody returns a runner whose nslab runs as user nobody: the test
// binary is copied where nobody can run it.
func asNobody(t *testing.T) *runner {
	t.Helper()
	labtest.SkipUnlessRoot(t) // needs root to switch to another user
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // the test's temporary root
	bin := filepath.Join(dir, "nslab")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return &runner{t: t, bin: bin, stateDir: filepath.Join(dir, "state"), nobody: true}
}

// asNobodyRootless is asNobody with the state directory of a rootless
// user (package rootless), which it removes at the end.
func asNobodyRootless(t *testing.T) *runner {
	c := asNobody(t)
	c.stateDir = ""
	dir := "/tmp/nslab-65534"
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s is there before the test", dir)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return c
}

// newCLI runs nslab as this test runs: as root with a state directory of
// the test's own; as another user (make test-unit) rootless, with a
// runtime directory of the test's own (a state directory is root's).
func newCLI(t *testing.T) *runner {
	if os.Geteuid() != 0 {
		return &runner{t: t, bin: os.Args[0], env: []string{"XDG_RUNTIME_DIR=" + t.TempDir()}}
	}
	return &runner{t: t, bin: os.Args[0], stateDir: t.TempDir()}
}

func (c *runner) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Args[0] = "nslab"
	if len(c.wrap) > 0 {
		cmd = exec.Command(c.wrap[0], append(append(c.wrap[1:len(c.wrap):len(c.wrap)], c.bin), args...)...)
	}
	cmd.Env = append(os.Environ(), "NSLAB_RUN_MAIN=1")
	if _, ok := os.LookupEnv("NSLAB_WIDTH"); !ok {
		// The tests match phrases in nslab's output: folded at 120, a
		// phrase would break across lines where its figures make the line
		// long. Folding is tested on its own (internal/fold, the docs'
		// transcripts, README's first screen); NSLAB_WIDTH=120 go test -v
		// shows the output as a person sees it (several-hosts.md quotes it).
		cmd.Env = append(cmd.Env, "NSLAB_WIDTH=0")
	}
	if c.stateDir != "" {
		cmd.Env = append(cmd.Env, "NSLAB_STATE_DIR="+c.stateDir)
	}
	cmd.Env = append(cmd.Env, c.env...)
	if c.nobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	return cmd
}

// measuring is held while a test's bench runs: the tests that run in
// parallel (t.Parallel) never send their traffic at once, since a bench
// reads machine-wide counters (softnet_stat, CPU time) and would count
// the other's load as its own, as -p 1 keeps packages apart.
var measuring sync.Mutex

// run runs nslab and returns its exit code, stdout and stderr; a bench
// waits for any other test's bench to end.
func (c *runner) run(args ...string) (int, string, string) {
	c.t.Helper()
	if slices.Contains(args, "bench") {
		measuring.Lock()
		defer measuring.Unlock()
	}
	cmd := c.cmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// labFile writes an example under a random lab name and prefix.
func labFile(t *testing.T, example string) (path, name string) {
	data, err := os.ReadFile(filepath.Join("../../examples", example))
	if err != nil {
		t.Fatal(err)
	}
	name = labtest.Name("c")
	path = filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, labtest.Rename(data, name), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, name
}

func TestValidateCommand(t *testing.T) {
	c := newCLI(t)
	code, out, _ := c.run("validate", "-t", "../../examples/client-router-server.yaml")
	if code != 0 || !strings.Contains(out, "lab crs is valid: 3 nodes, 2 links") {
		t.Fatalf("valid file: code %d, %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nnodes:\n  a:\n    interfaces: {e0: {mtu: 9}}\nlinks: [{endpoints: [a:e0, b:e0]}]\n"), 0o644)
	code, _, errOut := c.run("validate", bad)
	if code != 1 || !strings.Contains(errOut, bad+":4:28: nodes.a.interfaces.e0.mtu") || !strings.Contains(errOut, bad+":5:28: links[0].endpoints[1]") {
		t.Fatalf("invalid file: code %d, %q", code, errOut)
	}
}

// TestNotRoot runs nslab as an unprivileged user: one clear line, exit 1,
// nothing attempted.
// TestNotRoot: a user other than root gets rootless labs, and one that
// also names a state directory of its own (as this runner does) is
// refused in one line before anything starts.
func TestNotRoot(t *testing.T) {
	c := asNobody(t)
	file, name := labFile(t, "pair.yaml")
	os.Chmod(filepath.Dir(file), 0o755)
	os.Chmod(file, 0o644)
	for _, args := range [][]string{{"deploy", file}, {"destroy", "--name", name}, {"inspect"}, {"exec", "ns1", "--", "true"}, {"check", file}} {
		cmd := c.cmd(args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 1 {
			t.Fatalf("%v as nobody: %v", args, err)
		}
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "--state-dir (or NSLAB_STATE_DIR) is for labs deployed by root") {
			t.Errorf("%v as nobody: %q", args, errb.String())
		}
	}
	if _, err := os.Stat(c.stateDir); err == nil {
		t.Errorf("unprivileged run created %s", c.stateDir)
	}
	if ok, _ := ns.Exists(ns.DefaultDir, name+"-ns1"); ok {
		t.Errorf("unprivileged run created a namespace")
	}
	if _, err := os.Stat("/tmp/nslab-65534/holder"); err == nil {
		t.Errorf("a refused run started a rootless holder")
	}
}

func TestPrivilegedDeployExecInspectDestroy(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "pair.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, out, errOut := c.run("deploy", "-t", file); code != 0 || !strings.Contains(out, "deployed lab "+name) {
		t.Fatalf("deploy: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := c.run("exec", "ns1", "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("exit code through exec: %d (%s)", code, errOut)
	}
	// /sys is the node's own: exactly its interfaces.
	code, out, errOut := c.run("exec", name+":ns1", "--", "ls", "/sys/class/net")
	if code != 0 || strings.Join(strings.Fields(out), " ") != "lo veth1" {
		t.Errorf("/sys/class/net in ns1: %d %q %s", code, out, errOut)
	}
	code, out, _ = c.run("inspect", "--name", name, "--format", "json")
	var info struct {
		Nodes []struct {
			Node       string
			Interfaces []struct{ Name, Peer string }
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || len(info.Nodes) != 2 {
		t.Fatalf("inspect json: %d %q", code, out)
	}
	if code, out, _ = c.run("inspect", "-t", file); code != 0 || !strings.Contains(out, "ns2:veth2") {
		t.Errorf("inspect table: %d %q", code, out)
	}
	inspectQdisc(t, c, file, name)
	code, out, errOut = c.run("destroy", "-t", file, "--wait")
	if code != 0 || !strings.Contains(out, "2 namespaces removed") || !strings.Contains(out, "the kernel finished tearing the namespaces down") {
		t.Errorf("destroy --wait: %d %q %s", code, out, errOut)
	}
	if code, out, _ = c.run("destroy", "-t", file); code != 0 || !strings.Contains(out, "nothing to destroy") {
		t.Errorf("second destroy: %d %q", code, out)
	}
}

// inspectQdisc: an impairment's counters in inspect, JSON and table, are
// the kernel's after a bench overflows it: packets sent, dropped, and the
// times its rate held one back.
func inspectQdisc(t *testing.T, c *runner, file, name string) {
	t.Helper()
	if code, out, errOut := c.run("impair", "ns1:veth1", "--name", name, "--rate", "100kbit", "--limit", "3"); code != 0 {
		t.Fatalf("impair: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := c.run("bench", "--traffic", "pair", "--count", "2000", "--rate", "20kpps", file); code != 0 || !strings.Contains(out, "qdisc of ns1:veth1") {
		t.Fatalf("bench into the impairment: %d %s %s", code, out, errOut) // it loses: the point
	}
	code, out, _ := c.run("inspect", "--name", name, "--format", "json")
	var info struct {
		Nodes []struct {
			Interfaces []struct {
				Name   string
				Qdiscs []struct {
					Kind                       string
					Packets, Drops, Overlimits uint32
				}
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || len(info.Nodes[0].Interfaces) < 2 {
		t.Fatalf("inspect json: %d %q", code, out)
	}
	q := info.Nodes[0].Interfaces[1].Qdiscs
	if len(q) != 1 || q[0].Kind != "tbf" || q[0].Packets == 0 || q[0].Drops == 0 || q[0].Overlimits == 0 {
		t.Errorf("ns1:veth1's qdiscs after 2,000 frames at 20 kpps into 100 kbit/s and 3 packets: %+v", q)
	}
	if code, out, _ = c.run("inspect", "--name", name); code != 0 || !strings.Contains(out, "OVERLIMITS") || !strings.Contains(out, "tbf (root)") {
		t.Errorf("inspect table: %d %q", code, out)
	}
}

// startPaused starts a deploy that stops before step k and waits until it
// says so.
func startPaused(t *testing.T, c *runner, file string, k int) *exec.Cmd {
	t.Helper()
	saved := c.env
	c.env = append(append([]string(nil), saved...), "NSLAB_TEST_PAUSE_AT="+strconv.Itoa(k))
	defer func() { c.env = saved }()
	cmd := c.cmd("deploy", file)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "paused before step") {
				done <- true
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("deploy did not reach the pause")
	}
	return cmd
}

func nsLeft(name string, nodes ...string) []string {
	var left []string
	for _, n := range nodes {
		if ok, _ := ns.Exists(ns.DefaultDir, name+"-"+n); ok {
			left = append(left, n)
		}
	}
	return left
}

// TestPrivilegedCtrlC interrupts a deploy in the middle: exit 130 and
// nothing left.
func TestPrivilegedCtrlC(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	cmd := startPaused(t, c, file, 5)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit after Ctrl-C: %v", err)
	}
	if left := nsLeft(name, "ns1", "ns2", "ns3"); len(left) > 0 {
		t.Errorf("left after Ctrl-C: %v", left)
	}
}

// TestPrivilegedDestroyAfterKill kills deploys with SIGKILL at several points
// of the plan, then destroys.
func TestPrivilegedDestroyAfterKill(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	l, err := spec.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	last := len(lab.Plan(l))
	for _, k := range []int{1, 2, 4, 6, last} {
		c := newCLI(t)
		file, name := labFile(t, "client-router-server.yaml")
		t.Cleanup(func() { c.run("destroy", "--name", name) })
		cmd := startPaused(t, c, file, k)
		cmd.Process.Kill()
		cmd.Wait()
		if code, _, errOut := c.run("deploy", file); code != 1 || !strings.Contains(errOut, "was interrupted") {
			t.Errorf("k=%d: deploy over an interrupted one: %d %s", k, code, errOut)
		}
		if code, out, errOut := c.run("destroy", "--name", name); code != 0 {
			t.Fatalf("k=%d: destroy: %d %s %s", k, code, out, errOut)
		}
		if left := nsLeft(name, "ns1", "ns2", "ns3"); len(left) > 0 {
			t.Errorf("k=%d: left after destroy: %v", k, left)
		}
		// And the lab deploys again cleanly.
		if code, _, errOut := c.run("deploy", file); code != 0 {
			t.Errorf("k=%d: redeploy: %s", k, errOut)
		}
		c.run("destroy", "--name", name)
	}
}

// TestPrivilegedDestroyByMarkersOnly removes the state file of a killed
// deploy: destroy --name still finds the namespaces by their markers.
func TestPrivilegedDestroyByMarkersOnly(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	cmd := startPaused(t, c, file, 6)
	cmd.Process.Kill()
	cmd.Wait()
	os.Remove(filepath.Join(c.stateDir, name+".json"))
	if code, out, errOut := c.run("destroy", "--name", name); code != 0 || !strings.Contains(out, "3 namespaces removed") {
		t.Fatalf("destroy: %d %q %s", code, out, errOut)
	}
	if left := nsLeft(name, "ns1", "ns2", "ns3"); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// TestPrivilegedBenchSweepSurvivesKill runs a 3-size sweep with a results
// file, kills nslab with SIGKILL after the first completed size, and checks
// every line in the file is a whole report. Then a complete short sweep
// runs to the end.
func TestPrivilegedBenchSweepSurvivesKill(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	out := filepath.Join(t.TempDir(), "results.jsonl")
	cmd := c.cmd("bench", "-q", "--traffic", "sweep", "--frame", "64", "--frame", "128", "--frame", "256",
		"--duration", "1s", "--engine", "userspace", "--out", out, file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if b, _ := os.ReadFile(out); bytes.Count(b, []byte("\n")) >= 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	lines := readLines(t, out)
	if len(lines) < 1 || len(lines) > 2 || lines[0]["frame"].(float64) != 64 {
		t.Fatalf("results after SIGKILL: %v", lines)
	}
	if code, _, errOut := c.run("destroy", "--name", name); code != 0 {
		t.Fatalf("destroy after kill: %s", errOut)
	}
	// A whole sweep of 3 sizes with short trials.
	out2 := filepath.Join(t.TempDir(), "sweep.jsonl")
	start := time.Now()
	code, stdout, errOut := c.run("bench", "-q", "--traffic", "sweep", "--frame", "64", "--frame", "512", "--frame", "1518",
		"--count", "5000", "--engine", "userspace", "--format", "csv", "--out", out2, file)
	if code != 0 {
		t.Fatalf("sweep: %d %s", code, errOut)
	}
	t.Logf("the sweep took %v", time.Since(start))
	if n := len(readLines(t, out2)); n != 3 || strings.Count(stdout, "\n") != 4 {
		t.Errorf("sweep: %d result lines, csv %q", n, stdout)
	}
	// A throughput search of one size with short trials (the binary one).
	start = time.Now()
	code, stdout, errOut = c.run("bench", "--search-binary", "--trial", "300ms", "--frame", "64", "--engine", "userspace", "--format", "json", file)
	var found []map[string]any
	t.Logf("the search took %v", time.Since(start))
	if code != 0 || json.Unmarshal([]byte(stdout), &found) != nil || len(found) != 1 || found[0]["confirmed"] != true ||
		found[0]["throughput_pps"].(float64) <= 0 {
		t.Errorf("search: %d %q %s", code, stdout, errOut)
	}
	if left := nsLeft(name, "ns1", "ns2", "ns3"); len(left) > 0 {
		t.Errorf("bench left %v", left)
	}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line is not a whole JSON report: %v: %.80q", err, line)
		}
		out = append(out, m)
	}
	return out
}

// TestPrivilegedSRIOVDestroyAfterKill kills deploys of an SR-IOV lab (a fake
// sysfs tree whose VFs are veth ends) with SIGKILL before, between and after
// the VF hand-overs; destroy must give every VF back under its own name and
// restore sriov_numvfs.
func TestPrivilegedSRIOVDestroyAfterKill(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	for _, k := range []int{3, 4, 5, 6, 7} {
		pf := labtest.NewFakePF(t, 2)
		name := labtest.Name("k")
		y := fmt.Sprintf(`name: %[1]s
prefix: %[1]s-
sriov:
  - {pf: %[2]s, numvfs: 2, vfs: [{index: 0, node: ns1, name: vf0}, {index: 1, node: ns2, name: vf1}]}
nodes:
  ns1: {interfaces: {vf0: {addresses: [192.168.1.11/24]}}}
  ns2: {interfaces: {vf1: {addresses: [192.168.1.12/24]}}}
`, name, pf.PF)
		file := filepath.Join(t.TempDir(), "sriov.yaml")
		os.WriteFile(file, []byte(y), 0o644)
		c := newCLI(t)
		c.env = []string{"NSLAB_SYSFS=" + pf.Root}
		t.Cleanup(func() { c.run("destroy", "--name", name) })
		cmd := startPaused(t, c, file, k)
		cmd.Process.Kill()
		cmd.Wait()
		if code, out, errOut := c.run("destroy", "--name", name); code != 0 {
			t.Fatalf("k=%d: destroy: %s %s", k, out, errOut)
		}
		for _, vf := range pf.VFs {
			if _, err := netlink.LinkByName(vf); err != nil {
				t.Errorf("k=%d: VF %s not back in the host: %v", k, vf, err)
			}
		}
		if got := pf.NumVFs(t); got != "0" {
			t.Errorf("k=%d: sriov_numvfs %s, want 0", k, got)
		}
		if left := nsLeft(name, "ns1", "ns2"); len(left) > 0 {
			t.Errorf("k=%d: left %v", k, left)
		}
	}
}

// TestPrivilegedSRIOVWithoutThePF: on a machine without the example's PF,
// deploy says so and changes nothing.
func TestPrivilegedSRIOVWithoutThePF(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if _, err := os.Stat("/sys/class/net/ens4f0np0"); err == nil {
		t.Skip("this machine has ens4f0np0")
	}
	c := newCLI(t)
	file, name := labFile(t, "sriov-vfs.yaml")
	code, _, errOut := c.run("deploy", file)
	if code != 1 || !strings.Contains(errOut, "PF ens4f0np0 does not exist on this machine") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("deploy: %d %s", code, errOut)
	}
	if left := nsLeft(name, "ns1", "ns2"); len(left) > 0 {
		t.Errorf("left %v", left)
	}
	if _, err := os.Stat(filepath.Join(c.stateDir, name+".json")); err == nil {
		t.Errorf("a refused deploy wrote state")
	}
}

// TestPrivilegedBenchPlacement runs the forwarding benchmark example the
// way make run does: on a machine with its CPUs the report names the router
// and balances; a placement this machine cannot give is refused before
// anything is deployed (--placement on), or left out with the reason in the
// report (--placement auto); and an unknown mode or CPU list is refused.
func TestPrivilegedBenchPlacement(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "forwarding-benchmark.yaml")
	if n := runtime.NumCPU(); n >= 2 {
		code, out, errOut := c.run("bench", "-q", "--placement", "auto", "--duration", "2s", "--format", "json", file)
		var rep map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("bench: code %d %s", code, errOut)
		}
		if rep["unaccounted"].(float64) != 0 || !strings.HasPrefix(rep["bottleneck"].(string), "router r1") {
			t.Errorf("placed run: unaccounted %v, bottleneck %q", rep["unaccounted"], rep["bottleneck"])
		}
	}
	far := filepath.Join(t.TempDir(), "far.yaml")
	data, _ := os.ReadFile(file)
	if err := os.WriteFile(far, bytes.Replace(data, []byte("cpus: [1]"), []byte("cpus: [4000]"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := c.run("bench", "-q", "--duration", "1s", far)
	if code == 0 || !strings.Contains(errOut, "cannot apply here: the lab places work on cpu4000") {
		t.Fatalf("--placement on without the CPU: code %d %s", code, errOut)
	}
	if left := nsLeft(name, "client", "r1", "server"); len(left) > 0 {
		t.Fatalf("a refused bench left %v", left)
	}
	code, out, errOut := c.run("bench", "-q", "--placement", "auto", "--count", "1000", "--rate", "20kpps", far)
	if code != 0 || !strings.Contains(out, "placement: none: the lab places work on cpu4000") || !strings.Contains(out, "unaccounted 0") {
		t.Fatalf("--placement auto without the CPU: code %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"--placement", "sometimes"}, {"--cpus", "0-"}, {"--cpus", "0,1", "--threads", "3"}} {
		if code, _, errOut := c.run(append(append([]string{"bench", "-q"}, args...), file)...); code == 0 || errOut == "" {
			t.Errorf("%v accepted: %s", args, errOut)
		}
	}
}

// TestPrivilegedServiceStoppedAfterKill kills nslab with SIGKILL while a
// deploy checks the service it started: destroy stops the service all the
// same (a service whose pid was never recorded is the lab package's test).
func TestPrivilegedServiceStoppedAfterKill(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	data, _ := os.ReadFile(file)
	marker := fmt.Sprintf("sleep %d", 100000+time.Now().UnixNano()%100000) // tells this test's service from any other
	src := strings.Replace(string(data), "  ns3:\n", "  ns3:\n    run: [\""+marker+"\"]\n", 1)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := spec.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	steps := lab.Plan(l)
	if !strings.HasPrefix(steps[len(steps)-1].Name, "check that the services keep running") {
		t.Fatalf("the last step is %q", steps[len(steps)-1].Name)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	cmd := startPaused(t, c, file, len(steps))
	if out, _ := exec.Command("pgrep", "-f", marker).Output(); len(out) == 0 {
		t.Fatalf("the service %q is not running before the kill", marker)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if code, out, errOut := c.run("destroy", "--name", name); code != 0 || !strings.Contains(out, "process(es) stopped") {
		t.Fatalf("destroy: %d %s %s", code, out, errOut)
	}
	if out, _ := exec.Command("pgrep", "-f", marker).Output(); len(out) > 0 {
		t.Errorf("the service %q still runs after destroy: pids %s", marker, out)
	}
}

// TestGenerateCommand: nslab generate writes a lab file that validate
// takes, with the flags after the shape as well as before it; a bad shape
// or size is a usage error (exit 2).
func TestGenerateCommand(t *testing.T) {
	c := newCLI(t)
	code, out, errOut := c.run("generate", "clos", "--n", "4", "--spines", "3", "--routes")
	if code != 0 || !strings.HasPrefix(out, "# nslab generate clos --n 4 --spines 3 --routes\nname: clos\n") {
		t.Fatalf("generate: code %d, %q, %q", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "clos.yaml")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := c.run("validate", file); code != 0 || !strings.Contains(out, "7 nodes, 12 links") {
		t.Errorf("validate the generated file: code %d, %q", code, out)
	}
	if code, _, errOut := c.run("generate", "ring", "--n", "4"); code != 2 || !strings.Contains(errOut, "unknown shape") {
		t.Errorf("unknown shape: code %d, %q", code, errOut)
	}
	if code, _, errOut := c.run("generate", "--n", "0", "chain"); code != 2 || !strings.Contains(errOut, "at least 1") {
		t.Errorf("no nodes: code %d, %q", code, errOut)
	}
}

// TestExportCommand: nslab export writes the containerlab topology on
// stdout and what it left out on stderr, options before or after the
// file; an unknown format is a usage error.
func TestExportCommand(t *testing.T) {
	c := newCLI(t)
	code, out, errOut := c.run("export", "../../examples/nat-router.yaml", "--image", "alpine:3")
	if code != 0 || !strings.HasPrefix(out, "name: nat\ntopology:\n") || !strings.Contains(out, "image: alpine:3") ||
		!strings.Contains(out, "- nft 'add rule inet nslab postrouting oifname \"wan0\" counter masquerade") {
		t.Fatalf("export: code %d, %q, %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "not exported: traffic runs lan-wan") {
		t.Errorf("stderr %q", errOut)
	}
	if code, _, errOut := c.run("export", "--format", "kathara", "../../examples/pair.yaml"); code != 2 || !strings.Contains(errOut, "--format is containerlab") {
		t.Errorf("unknown format: code %d, %q", code, errOut)
	}
}

// TestBenchTCPFlag: --tcp N makes the run N TCP flows: the report has each
// flow and the losses line, in JSON too; a flow count out of range and a
// flag for UDP frames beside it are refused before anything is deployed.
func TestBenchTCPFlag(t *testing.T) {
	c := newCLI(t)
	file, _ := labFile(t, "client-router-server.yaml")
	if code, _, errOut := c.run("bench", "--tcp", "0", file); code != 2 || !strings.Contains(errOut, "--tcp 0: give 1 to 128 flows") {
		t.Errorf("--tcp 0: exit %d, %s", code, errOut)
	}
	if code, _, errOut := c.run("bench", "--tcp", "2", "--frame", "128", file); code != 2 || !strings.Contains(errOut, "--frame is for UDP frames") {
		t.Errorf("--tcp with --frame: exit %d, %s", code, errOut)
	}
	labtest.SkipUnlessRoot(t)
	code, out, errOut := c.run("bench", "-q", "--tcp", "2", "--duration", "1s", "--format", "json", file)
	var rep struct {
		TCP struct {
			Flows []struct {
				Received uint64 `json:"received_bytes"`
			} `json:"flows"`
			Losses struct {
				Lost     int64 `json:"lost"`
				Spurious int64 `json:"spurious"`
				Retrans  int64 `json:"retransmitted"`
			} `json:"losses"`
		} `json:"tcp"`
		Bottleneck string `json:"bottleneck"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.TCP.Flows) != 2 || rep.TCP.Flows[0].Received == 0 || rep.Bottleneck == "" {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	if l := rep.TCP.Losses; l.Lost+l.Spurious != l.Retrans {
		t.Errorf("retransmitted %d, lost %d, spurious %d", l.Retrans, l.Lost, l.Spurious)
	}
}
