package fleet

import (
	"bufio"
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The fake agent: this test binary, run by fakeShell in place of nslab
// agent on a host, answers the protocol as a scripted agent would.
const (
	fakeAgentEnv = "NSLAB_FLEET_FAKE_AGENT" // the host it is
	fakeFailEnv  = "NSLAB_FLEET_FAKE_FAIL"  // "deploy:CODE" fails the deploy; "deploy:lost" ends without answering; "mtu:lost" ends at the MTU probe
	fakeLogEnv   = "NSLAB_FLEET_FAKE_LOG"   // a file each verb run is appended to, as "HOST VERB"
	fakeIDEnv    = "NSLAB_FLEET_FAKE_ID"    // the binary hash it says it has
	fakeArchEnv  = "NSLAB_FLEET_FAKE_ARCH"  // the architecture it says it is (default amd64)
)

func TestMain(m *testing.M) {
	if host := os.Getenv(fakeAgentEnv); host != "" {
		os.Exit(fakeAgent(host))
	}
	os.Exit(m.Run())
}

// fakeAgent answers hello, plan, mtu (every size fits) and run: each verb
// is logged; inspect finds no lab; the deploy fails or is lost as
// fakeFailEnv says; every other verb succeeds.
func fakeAgent(host string) int {
	s := newStream(bufio.NewReader(os.Stdin), os.Stdout)
	verb, failure, _ := strings.Cut(os.Getenv(fakeFailEnv), ":")
	for {
		var r Request
		if s.recv(&r) != nil {
			return 0
		}
		resp := Response{}
		switch r.Op {
		case OpHello:
			resp.Hello = &Hello{Version: "fake", Binary: os.Getenv(fakeIDEnv), Arch: cmp.Or(os.Getenv(fakeArchEnv), "amd64")}
		case OpMTU:
			if verb == "mtu" && failure == "lost" {
				return 1 // the host is gone as its underlay is probed
			}
			resp.Fits, resp.Largest = true, r.Size
		case OpRun:
			f, _ := os.OpenFile(os.Getenv(fakeLogEnv), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
			f.WriteString(host + " " + r.Args[0] + "\n")
			f.Close()
			switch {
			case r.Args[0] == verb && failure == "lost":
				return 1 // the host is gone mid-verb: no answer
			case r.Args[0] == verb:
				resp.Code, resp.Stderr = 1, "nslab: a device of that name exists\n"
			case r.Args[0] == "inspect":
				resp.Code, resp.Stderr = 1, "nslab: lab is not deployed\n"
			}
		}
		if s.send(resp) != nil {
			return 0
		}
	}
}

// fakeShell runs the fake agent for host, failing as fail says.
type fakeShell struct{ host, fail, log, id string }

func (f fakeShell) Command(ctx context.Context, _ string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeAgentEnv+"="+f.host, fakeLogEnv+"="+f.log, fakeIDEnv+"="+f.id)
	if f.fail != "" {
		cmd.Env = append(cmd.Env, fakeFailEnv+"="+f.fail)
	}
	return cmd
}
func (f fakeShell) String() string { return "fake shell to " + f.host }
func (f fakeShell) Host() string   { return f.host }

// TestDeployRollback: Coordinator.Deploy through fake agents. A deploy
// that fails on one host has every other host's share destroyed (the
// failed host's nslab deploy took its own back, as it does); a host lost
// mid-deploy is named, and the reachable hosts' shares are taken back
// (the lost host's agent undoes its own as its input ends); a deploy
// that succeeds everywhere takes nothing back.
func TestDeployRollback(t *testing.T) {
	p := plan(t, threeHosts)
	id := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, failing, fail string
		wantErr             []string
		destroyed           []string
	}{
		{"fails on b", "b", "deploy:1", []string{"host b: deploy", "a device of that name exists", "every host's share was taken back"}, []string{"a", "c"}},
		{"c lost", "c", "deploy:lost", []string{"host c", "every host's share was taken back"}, []string{"a", "b"}},
		{"c lost while its underlay is probed", "c", "mtu:lost", []string{"host c stopped answering while the underlay's MTU was probed", "nothing was made"}, nil},
		{"all deploy", "", "", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "verbs")
			dialers := map[string]Dialer{}
			for _, h := range p.Hosts() {
				sh := fakeShell{host: h, log: log, id: id}
				if h == c.failing {
					sh.fail = c.fail
				}
				dialers[h] = Remote{Shell: sh, ID: id}
			}
			co, err := Open(context.Background(), p, []byte(threeHosts), dialers, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer co.Close()
			_, err = co.Deploy(context.Background())
			for _, w := range c.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want %q in it", err, w)
				}
			}
			if c.wantErr == nil && err != nil {
				t.Errorf("deploy: %v", err)
			}
			if err != nil && c.fail == "mtu:lost" && strings.Contains(err.Error(), "does not carry") {
				t.Errorf("a lost host is reported as the underlay's MTU: %v", err)
			}
			data, _ := os.ReadFile(log)
			var destroyed []string
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if host, verb, _ := strings.Cut(l, " "); verb == "destroy" {
					destroyed = append(destroyed, host)
				}
			}
			slices.Sort(destroyed)
			if !slices.Equal(destroyed, c.destroyed) {
				t.Errorf("destroyed on %v, want %v (verbs run: %q)", destroyed, c.destroyed, data)
			}
		})
	}
}
