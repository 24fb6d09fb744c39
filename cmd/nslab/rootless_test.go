package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// student is a user made for a test (useradd), who runs nslab with su as
// a person without root would. Everything is removed at the test's end.
type student struct {
	t    *testing.T
	name string
	uid  int
	dir  string // the nslab binary and lab files, readable by the user
}

func newStudent(t *testing.T) *student {
	t.Helper()
	labtest.SkipUnlessRoot(t)
	for _, tool := range []string{"useradd", "userdel", "su", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	name := labtest.Name("st")
	if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	s := &student{t: t, name: name, dir: t.TempDir()}
	t.Cleanup(s.remove)
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	if s.uid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		t.Fatal(err)
	}
	os.Chmod(s.dir, 0o755)
	os.Chmod(filepath.Dir(s.dir), 0o755)
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "nslab"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// lab writes an example (labFile: a random lab name) where the user
// reads it, as file, and returns the lab's name.
func (s *student) lab(example, file string) string {
	s.t.Helper()
	path, name := labFile(s.t, example)
	data, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, file), data, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return name
}

// stateDir is the user's rootless directory (no XDG_RUNTIME_DIR under su).
func (s *student) stateDir() string { return fmt.Sprintf("/tmp/nslab-%d", s.uid) }

// nslab runs nslab ARGS as the user, in the test's directory, and returns
// its exit code and its output.
func (s *student) nslab(args ...string) (int, string) {
	s.t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	line := "unset XDG_RUNTIME_DIR NSLAB_STATE_DIR NSLAB_NETNS_DIR; cd " + s.dir + " && NSLAB_RUN_MAIN=1 TMPDIR=/tmp exec ./nslab " + strings.Join(quoted, " ")
	cmd := exec.Command("su", s.name, "-s", "/bin/sh", "-c", line)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return code, string(out)
}

// must runs nslab ARGS as the user and fails the test unless it succeeds.
func (s *student) must(args ...string) string {
	s.t.Helper()
	code, out := s.nslab(args...)
	if code != 0 {
		s.t.Fatalf("nslab %s as %s: exit %d:\n%s", strings.Join(args, " "), s.name, code, out)
	}
	return out
}

// metrics runs nslab metrics as the user and returns what the host's
// loopback gets from it: a verb that serves stays in the host's network
// namespace.
func (s *student) metrics(lab string) string {
	s.t.Helper()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(s.dir, webHelperName), "../nslab-web").CombinedOutput(); err != nil {
		s.t.Fatalf("build %s: %v\n%s", webHelperName, err, out)
	}
	addr := freePort(s.t)
	cmd := exec.Command("su", s.name, "-s", "/bin/sh", "-c", "unset XDG_RUNTIME_DIR; cd "+s.dir+" && NSLAB_RUN_MAIN=1 TMPDIR=/tmp exec ./nslab metrics --listen "+addr+" "+lab)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	}()
	for i := 0; i < 50; i++ {
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(body)
	}
	return "(nothing listens on " + addr + ")"
}

// processes are the user's processes (zombies the host's init has not
// reaped yet included).
func (s *student) processes() string {
	out, _ := exec.Command("ps", "-u", strconv.Itoa(s.uid), "-o", "pid=,stat=,args=").Output()
	return strings.TrimSpace(string(out))
}

// remove kills what the user left (a failed test's holder ends its labs
// with it) and removes the user and its directory.
func (s *student) remove() {
	exec.Command("pkill", "-KILL", "-u", strconv.Itoa(s.uid)).Run()
	for i := 0; i < 50 && s.processes() != ""; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	os.RemoveAll(s.stateDir())
	if out, err := exec.Command("userdel", s.name).CombinedOutput(); err != nil {
		s.t.Errorf("userdel %s: %v: %s", s.name, err, out)
	}
}

// TestPrivilegedRootlessLab: a user without root deploys the
// client-router-server lab, pings across it, checks it, traces a path,
// benches it at 20 kpps with the userspace engine, inspects it, watches it
// with top and destroys it; nothing is left on the host.
func TestPrivilegedRootlessLab(t *testing.T) {
	s := newStudent(t)
	name := s.lab("client-router-server.yaml", "crs.yaml")
	hostLinks := func() int {
		links, err := netlink.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		return len(links)
	}
	before := hostLinks()

	if out := s.must("deploy", "crs.yaml"); !strings.Contains(out, "deployed lab "+name) {
		t.Fatalf("deploy: %s", out)
	}
	if _, err := os.Stat(filepath.Join(s.stateDir(), "state", name+".json")); err != nil {
		t.Errorf("the lab's state is not under the user's directory: %v", err)
	}
	if ok, _ := ns.Exists(ns.DefaultDir, name+"-ns1"); ok || hostLinks() != before {
		t.Errorf("the rootless lab shows on the host: namespace %v, links %d (before %d)", ok, hostLinks(), before)
	}
	if out := s.must("exec", "ns1", "--", "ping", "-c", "2", "-W", "2", "10.0.2.1"); !strings.Contains(out, "2 received") {
		t.Errorf("ping across: %s", out)
	}
	if out := s.must("check", "crs.yaml"); !strings.Contains(out, "0 broken") {
		t.Errorf("check: %s", out)
	}
	if out := s.must("path", "-t", "crs.yaml", "ns1", "10.0.2.1"); !strings.Contains(out, "ns2") {
		t.Errorf("path: %s", out)
	}
	bench := s.must("bench", "--engine", "userspace", "--rate", "20kpps", "--duration", "2s", "crs.yaml")
	for _, want := range []string{"engine: userspace", "needs root on the host, and this lab is rootless", "unaccounted 0"} {
		if !strings.Contains(bench, want) {
			t.Errorf("bench says no %q:\n%s", want, bench)
		}
	}
	if out := s.must("inspect", "crs.yaml"); !strings.Contains(out, "10.0.2.1/24") {
		t.Errorf("inspect: %s", out)
	}
	if out := s.must("top", "--once", name); !strings.Contains(out, "veth2-peer") {
		t.Errorf("top: %s", out)
	}
	if body := s.metrics(name); !strings.Contains(body, fmt.Sprintf(`nslab_bench_running{lab=%q}`, name)) {
		t.Errorf("metrics of the rootless lab, from the host: %s", body)
	}
	code, out := s.nslab("bench", "--engine", "pktgen", "--duration", "1s", "crs.yaml")
	if code == 0 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "kernel pktgen (engine pktgen) needs root on the host") {
		t.Errorf("kernel pktgen in a rootless lab: exit %d: %s", code, out)
	}
	if out := s.must("destroy", "-t", "crs.yaml"); !strings.Contains(out, "destroyed lab "+name) {
		t.Errorf("destroy: %s", out)
	}

	labs, _ := os.ReadDir(filepath.Join(s.stateDir(), "state"))
	for _, e := range labs {
		if strings.HasSuffix(e.Name(), ".json") {
			t.Errorf("state left: %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(s.stateDir(), "holder")); err == nil {
		t.Errorf("the holder is still recorded after the last lab went")
	}
	// The stopped holder is a zombie until the host's init reaps it.
	left := s.processes()
	for i := 0; i < 100 && left != ""; i++ {
		time.Sleep(100 * time.Millisecond)
		left = s.processes()
	}
	if left != "" {
		t.Errorf("processes left:\n%s", left)
	}
	if hostLinks() != before {
		t.Errorf("host links %d, before %d", hostLinks(), before)
	}
}

// TestPrivilegedRootlessRefuses: what needs the host's root is refused
// in one line per item before anything is made, and the holder started
// for the deploy ends with it.
func TestPrivilegedRootlessRefuses(t *testing.T) {
	s := newStudent(t)
	s.lab("crs-grown.yaml", "grown.yaml")
	code, out := s.nslab("deploy", "grown.yaml")
	if code == 0 || !strings.Contains(out, "nothing was changed") || !strings.Contains(out, "nodes.ns3.limits: (cgroups of the host's) needs root on the host") ||
		!strings.Contains(out, fmt.Sprintf("(nslab runs as uid %d)", s.uid)) {
		t.Errorf("deploy of a lab with limits: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(s.stateDir(), "holder")); err == nil {
		t.Errorf("the holder stayed after a refused deploy")
	}
}

// TestPrivilegedRootlessUnavailable: where a user may not make a user
// namespace, a lab verb runs as it did before rootless labs, and says
// why there are none: deploy needs root, path answers from the file. The
// user (nobody) runs in a user namespace of the test's whose limit of
// user namespaces is 0.
func TestPrivilegedRootlessUnavailable(t *testing.T) {
	c := asNobodyRootless(t)
	file, _ := labFile(t, "client-router-server.yaml")
	os.Chmod(filepath.Dir(file), 0o755)
	os.Chmod(file, 0o644)
	nslab := func(args ...string) (int, string) {
		line := "echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$@\""
		cmd := exec.Command("sh", append([]string{"-c", line, "sh", c.bin}, args...)...)
		cmd.Env = append(os.Environ(), "NSLAB_RUN_MAIN=1", "TMPDIR=/tmp")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}}, GidMappingsEnableSetgroups: true}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	code, out := nslab("deploy", file)
	if code != 1 || !strings.Contains(out, "nslab needs root") || !strings.Contains(out, "rootless labs are not available here: a user namespace cannot be made") {
		t.Errorf("deploy without user namespaces: exit %d:\n%s", code, out)
	}
	code, out = nslab("path", file, "ns1", "ns3")
	if code != 0 || !strings.Contains(out, "from the file (the lab is not deployed)") {
		t.Errorf("path without user namespaces: exit %d:\n%s", code, out)
	}
}

// TestPrivilegedRootlessCtrlC: Ctrl-C on a rootless bench (SIGINT to its
// process group, as a terminal sends it) ends it as it ends a bench of
// root's: the lab it deployed for the run is destroyed before the prompt
// comes back, exit 130, and with no lab left the holder ends.
func TestPrivilegedRootlessCtrlC(t *testing.T) {
	s := newStudent(t)
	name := s.lab("client-router-server.yaml", "crs.yaml")
	cmd := exec.Command(filepath.Join(s.dir, "nslab"), "bench", "--engine", "userspace", "--rate", "10kpps", "--duration", "30s", "crs.yaml")
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=/tmp", "NSLAB_RUN_MAIN=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uint32(s.uid), Gid: uint32(s.uid)}}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(s.stateDir(), "state", name+".json")
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(state); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the run under way
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Errorf("bench after Ctrl-C: %v, want exit %d:\n%s", err, exitInterrupted, errb.String())
	}
	if _, err := os.Stat(state); err == nil {
		t.Errorf("the lab the bench deployed is still recorded after it returned:\n%s", errb.String())
	}
	if _, err := os.Stat(filepath.Join(s.stateDir(), "holder")); err == nil {
		t.Errorf("the holder is still recorded after the bench returned")
	}
}
