package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// soakKills is how many times the kill soak kills nslab in each phase:
// NSLAB_SOAK_KILLS (make soak sets 50), else 3, so that make test runs
// it too.
func soakKills() int {
	if n, err := strconv.Atoi(os.Getenv("NSLAB_SOAK_KILLS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// soakLab is host a's part of the two-host lab with everything a deploy
// can leave: a service, NAT and a firewall, an impairment (tbf), CPU
// placement and a VXLAN link.
func soakLab(src string) string {
	r := strings.NewReplacer(
		"  client:\n    host: a\n    interfaces:\n      eth0: {addresses: [10.1.1.1/24]}\n",
		"  client:\n    host: a\n    run: [\"sleep 1000\"]\n    cpus: [0]\n    interfaces:\n      eth0: {addresses: [10.1.1.1/24], impair: {rate: 500Mbit}}\n",
		"  server:\n    host: a\n",
		"  server:\n    host: a\n    forwarding: true\n    nat:\n      - masquerade: eth0\n    firewall:\n      policy: accept\n      rules:\n        - accept: {state: [established, related]}\n",
	)
	return r.Replace(src)
}

// TestPrivilegedKillSoak kills nslab with SIGKILL at random moments,
// soakKills times in each of deploy, destroy and bench of host a's part
// of a lab with a service, NAT, an impairment, placement and a VXLAN
// link (host b's part stays deployed), each moment drawn within the time
// a full run took. After each kill, one destroy must
// leave nothing of host a's part: no namespace, no link in host a's
// namespace but its own, no process of the lab, no state, and the lock
// free. make soak runs it 50 times each.
func TestPrivilegedKillSoak(t *testing.T) {
	// Not beside the waiting tests (tried): its full bench, which bounds
	// the kills' moments, then waits on their benches' turn (37 s against
	// about 4), and the kills drawn in that window mostly came after runs
	// that had ended.
	s := newSimHosts(t)
	src, err := os.ReadFile(s.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.file, []byte(soakLab(string(src))), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := s.onB.run("--host", "b", "deploy", s.file); code != 0 {
		t.Fatalf("deploy host b: %d %s %s", code, out, errOut)
	}
	deployTook := s.timed(t, "deploy", s.file)
	destroyTook := s.timed(t, "destroy", "--name", s.name)
	benchTook := s.timed(t, "bench", "--traffic", "through-b", s.file)
	kills, rng := soakKills(), rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	at := func(d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d) + 1)) }
	counts := map[string]int{}
	for _, phase := range []string{"deploy", "destroy", "bench"} {
		// Until kills runs were killed: a run that ends before its moment
		// counts as a run, not a kill (at most 4 runs a kill).
		for i := 0; counts[phase+" killed"] < kills && i < 4*kills; i++ {
			var args []string
			var window time.Duration
			switch phase {
			case "deploy":
				args, window = []string{"deploy", s.file}, deployTook
			case "destroy":
				if code, out, errOut := s.onA.run("--host", "a", "deploy", s.file); code != 0 {
					t.Fatalf("deploy before the destroy kill: %d %s %s", code, out, errOut)
				}
				args, window = []string{"destroy", "--name", s.name}, destroyTook
			case "bench":
				args, window = []string{"bench", "--traffic", "through-b", s.file}, benchTook
			}
			if s.killAt(t, at(window), args...) {
				counts[phase+" killed"]++
			}
			if code, out, errOut := s.onA.run("destroy", "--name", s.name); code != 0 {
				t.Fatalf("%s kill %d: destroy: %d %s %s", phase, i, code, out, errOut)
			}
			if left := s.leftOnA(t); left != "" {
				t.Fatalf("%s kill %d: left after destroy: %s", phase, i, left)
			}
			counts[phase]++
		}
	}
	for _, phase := range []string{"deploy", "destroy", "bench"} {
		t.Logf("kill soak, %s: %d runs, %d killed with SIGKILL at a random moment (the rest ended first); after each, one destroy left nothing",
			phase, counts[phase], counts[phase+" killed"])
	}
	t.Logf("kill soak: moments drawn within %v of deploy, %v of destroy, %v of bench (a full run's time)", deployTook, destroyTook, benchTook)
	for _, phase := range []string{"deploy", "destroy", "bench"} {
		if counts[phase+" killed"] < kills {
			t.Errorf("%s: %d kills in %d runs, want %d", phase, counts[phase+" killed"], counts[phase], kills)
		}
	}
}

// timed runs nslab on host a once to the end and returns how long it took.
func (s *simHosts) timed(t *testing.T, args ...string) time.Duration {
	t.Helper()
	t0 := time.Now()
	if code, out, errOut := s.onA.run(append([]string{"--host", "a"}, args...)...); code != 0 {
		t.Fatalf("%v: %d %s %s", args, code, out, errOut)
	}
	return time.Since(t0)
}

// killAt starts nslab on host a and kills it with SIGKILL after d, or
// lets it end if it ends first; it reports whether it killed it.
func (s *simHosts) killAt(t *testing.T, d time.Duration, args ...string) bool {
	t.Helper()
	cmd := s.onA.cmd(append([]string{"--host", "a"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return false
	case <-time.After(d):
		cmd.Process.Kill() // ip netns exec execs nslab: this is nslab itself
		<-done
		return true
	}
}

// leftOnA names what is left of host a's part ("" when nothing).
func (s *simHosts) leftOnA(t *testing.T) string {
	t.Helper()
	var left []string
	if ns := nsLeft(s.name, "client", "server"); len(ns) > 0 {
		left = append(left, "namespaces "+strings.Join(ns, ", "))
	}
	if got := strings.Join(hostLinks(t, s.a), " "); got != "lo under0" {
		left = append(left, "host a's links "+got)
	}
	if files, _ := filepath.Glob(filepath.Join(s.onA.stateDir, s.name+"*")); len(files) > 0 {
		left = append(left, "state "+strings.Join(files, ", "))
	}
	if _, err := os.Stat(filepath.Join(s.onA.stateDir, "views", s.name)); err == nil {
		left = append(left, "the nodes' views")
	}
	if procs := labProcesses(s.name); len(procs) > 0 {
		left = append(left, "processes "+strings.Join(procs, ", "))
	}
	if !lockFree(filepath.Join(s.onA.stateDir, "lock")) {
		left = append(left, "the lock is held")
	}
	return strings.Join(left, "; ")
}

// labProcesses lists the pids whose environment carries lab's service
// mark.
func labProcesses(lab string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(env), "NSLAB_SERVICE="+lab+"/") {
			out = append(out, e.Name())
		}
	}
	return out
}

// lockFree reports whether nobody holds the state directory's lock (a
// missing lock file is free).
func lockFree(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	_ = unix.Flock(fd, unix.LOCK_UN)
	return true
}
