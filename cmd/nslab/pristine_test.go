package main

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// pristineEnv selects TestPristineMachineChild, which runs only as the
// child that TestPrivilegedPristineMachine starts.
const pristineEnv = "NSLAB_TEST_PRISTINE_CHILD"

// TestPrivilegedPristineMachine runs the two-host recipe on a machine
// where nothing has run yet, whatever this machine has seen: the child
// test runs in a mount namespace of its own (private propagation, as `/`
// is on a new boot) with a fresh tmpfs over /run, so /run/netns and
// /run/nslab do not exist. nslab makes the first namespaces there (the
// simulated hosts), then runs inside them under `ip netns exec`; the
// namespaces that those runs made must outlive them and be seen by their
// parent. Before the run directory was made a shared mount, the second
// step's namespaces vanished with the process that made them.
func TestPrivilegedPristineMachine(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		os.Args[0], "-test.run", "^TestPristineMachineChild$", "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), pristineEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil || !strings.Contains(out.String(), "--- PASS: TestPristineMachineChild") {
		t.Fatalf("pristine machine: %v\n%s", err, out.String())
	}
}

// TestPristineMachineChild is the body of TestPrivilegedPristineMachine.
func TestPristineMachineChild(t *testing.T) {
	if os.Getenv(pristineEnv) != "1" {
		t.Skip("runs only as the child of TestPrivilegedPristineMachine")
	}
	if err := mountTmpfs("/run"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ns.DefaultDir); !os.IsNotExist(err) {
		t.Fatalf("%s after a fresh tmpfs on /run: %v", ns.DefaultDir, err)
	}
	s := newSimHosts(t) // nslab's namespace package makes the first namespaces
	if !sharedMount(t, ns.DefaultDir) {
		t.Errorf("%s is not a shared mount after the first namespace", ns.DefaultDir)
	}
	if code, out, errOut := s.onA.run("--host", "a", "deploy", s.file); code != 0 {
		t.Fatalf("deploy host a under ip netns exec: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := s.onB.run("--host", "b", "deploy", s.file); code != 0 {
		t.Fatalf("deploy host b under ip netns exec: %d %s %s", code, out, errOut)
	}
	for _, node := range []string{"client", "router", "server"} {
		n, err := ns.Open(ns.DefaultDir, s.name+"-"+node)
		if err != nil {
			t.Fatalf("namespace of %s after its nslab exited: %v", node, err)
		}
		n.Close()
	}
	if n, err := labtest.Ping(ns.DefaultDir, s.name+"-client", netip.MustParseAddr("10.1.2.1"), 3, 2*time.Second); err != nil || n != 3 {
		t.Fatalf("client -> server through host b: %d of 3 answered, %v", n, err)
	}
	refusedWhereMountsVanish(t)
}

// refusedWhereMountsVanish: nslab in a mount namespace of its own whose
// /run/netns is private (unshare -m makes every mount private) refuses
// to deploy, naming the cause, and creates nothing.
func refusedWhereMountsVanish(t *testing.T) {
	c := newCLI(t)
	c.wrap = []string{"unshare", "--mount", "--propagation", "private", "--"}
	file, name := labFile(t, "pair.yaml")
	code, out, errOut := c.run("deploy", file)
	if code == 0 || !strings.Contains(errOut, "would vanish when nslab exits") {
		t.Fatalf("deploy in a private mount namespace: %d %s %s", code, out, errOut)
	}
	if left := nsLeft(name, "ns1", "ns2"); len(left) > 0 {
		t.Errorf("refused deploy left namespaces %v", left)
	}
	if files, _ := filepath.Glob(filepath.Join(c.stateDir, "*")); len(files) > 0 {
		t.Errorf("refused deploy left state %v", files)
	}
}

// sharedMount reports whether dir is a mount point with shared
// propagation in this process's mount namespace.
func sharedMount(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[4] == dir {
			for _, opt := range f[6:] {
				if strings.HasPrefix(opt, "shared:") {
					return true
				}
			}
		}
	}
	return false
}

// mountTmpfs mounts a fresh tmpfs on dir (in this test's own mount
// namespace).
func mountTmpfs(dir string) error {
	return unix.Mount("nslab-pristine", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755")
}

// TestPrivilegedDestroyDamagedState is the report's case: the
// client-router-server lab deployed, its state file cut to 100 bytes (a
// full disk, a power cut); destroy by name and by file still remove
// every namespace and the file, and say the state was damaged.
func TestPrivilegedDestroyDamagedState(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	file, name := labFile(t, "client-router-server.yaml")
	for _, how := range [][]string{{"--name", name}, {"-t", file}} {
		if code, out, errOut := c.run("deploy", file); code != 0 {
			t.Fatalf("deploy: %d %s %s", code, out, errOut)
		}
		p := filepath.Join(c.stateDir, name+".json")
		if err := os.Truncate(p, 100); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := c.run("inspect", "--name", name); code == 0 || !strings.Contains(errOut, p) || !strings.Contains(errOut, "is damaged") {
			t.Errorf("inspect with a damaged state: %d %s", code, errOut)
		}
		code, out, errOut := c.run(append([]string{"destroy"}, how...)...)
		if code != 0 || !strings.Contains(out, "its state file was damaged") || !strings.Contains(out, "3 namespaces removed") {
			t.Fatalf("destroy %v: %d %s %s", how, code, out, errOut)
		}
		if left := nsLeft(name, "ns1", "ns2", "ns3"); len(left) > 0 {
			t.Errorf("destroy %v left %v", how, left)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("destroy %v left the state file: %v", how, err)
		}
	}
}

// TestPrivilegedDamagedStateVXLAN: host a's deploy of the two-host lab
// killed with its first VXLAN interface made in the host namespace (step
// 4), and its state file then cut to 100 bytes: destroy --name finds the
// VXLAN device by its VNI name and the lab's marker, and the namespaces by
// theirs, and leaves nothing.
func TestPrivilegedDamagedStateVXLAN(t *testing.T) {
	s := newSimHosts(t)
	s.onA.env = []string{"NSLAB_HOST=a"}
	cmd := startPaused(t, s.onA, s.file, 4)
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.Contains(strings.Join(hostLinks(t, s.a), " "), "nslx") {
		t.Fatalf("no VXLAN in host a after a kill at step 4: %v", hostLinks(t, s.a))
	}
	if err := os.Truncate(filepath.Join(s.onA.stateDir, s.name+".json"), 100); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := s.onA.run("destroy", "--name", s.name)
	if code != 0 || !strings.Contains(out, "its state file was damaged") {
		t.Fatalf("destroy: %d %s %s", code, out, errOut)
	}
	s.assertNothingLeft(t)
}
