package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

const threeHosts = `name: h3
hosts:
  a: {underlay: 192.0.2.1}
  b: {underlay: 192.0.2.2}
  c: {underlay: 192.0.2.3, mtu: 9000}
nodes:
  x: {host: a, interfaces: {e0: {addresses: [10.0.0.1/24]}}}
  r: {host: b, forwarding: true, interfaces: {e0: {addresses: [10.0.0.2/24]}, e1: {addresses: [10.0.1.2/24]}}}
  y: {host: c, interfaces: {e0: {addresses: [10.0.1.1/24]}}}
links:
  - endpoints: [x:e0, r:e0]
  - endpoints: [r:e1, y:e0]
    vni: 77
`

func plan(t *testing.T, file string) *Plan {
	t.Helper()
	l, err := spec.Parse("h3.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan([]byte(file), l)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanShares: each host's share holds its nodes and both ends of each
// link between hosts agree on VNI, port and MTU.
func TestPlanShares(t *testing.T) {
	p := plan(t, threeHosts)
	b := p.Share("b")
	if b == nil || strings.Join(b.Nodes, ",") != "r" || len(b.Tunnels) != 2 {
		t.Fatalf("host b's share: %+v", b)
	}
	c := p.Share("c").Tunnels[0]
	if b.Tunnels[1].VNI != 77 || c.VNI != 77 || c.Port != 4789 || c.MTU != 1450 || c.RemoteHost != "b" || c.Local != "y:e0" {
		t.Errorf("the link to host c: b's end %+v, c's end %+v (MTU: the smaller underlay's 1500 less 50)", b.Tunnels[1], c)
	}
	if err := p.Agrees(plan(t, threeHosts)); err != nil {
		t.Errorf("the same file's plan: %v", err)
	}
}

// TestPlanRefused: a host that computes another plan (another file, or a
// share changed on the way) says what differs.
func TestPlanRefused(t *testing.T) {
	p := plan(t, threeHosts)
	other := plan(t, strings.Replace(threeHosts, "vni: 77", "vni: 78", 1))
	if err := p.Agrees(other); err == nil || !strings.Contains(err.Error(), "the file differs") {
		t.Errorf("another file: %v", err)
	}
	tampered := plan(t, threeHosts)
	tampered.Shares[2].Tunnels[0].MTU = 8950
	if err := tampered.Agrees(p); err == nil || !strings.Contains(err.Error(), "changed on the way") {
		t.Errorf("a share changed after hashing: %v", err)
	}
	tampered.Hash = tampered.hash()
	if err := tampered.Agrees(p); err == nil || !strings.Contains(err.Error(), "host c's share") {
		t.Errorf("a plan with host c's MTU changed: %v", err)
	}
}

// TestAgentProtocol: an agent answers hello, refuses a verb before the
// plan, refuses a plan that is not its own and a verb it does not run.
func TestAgentProtocol(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &Agent{Version: "v-test", Exe: "/bin/true", Argv: func(_, _ string, args []string) []string { return args }, In: inR, Out: outW}
	served := make(chan error, 1)
	go func() { served <- a.Serve(context.Background()) }()
	enc, dec := json.NewEncoder(inW), json.NewDecoder(outR)
	call := func(r Request) Response {
		t.Helper()
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		var resp Response
		if err := dec.Decode(&resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := call(Request{Op: OpHello}); r.Hello == nil || r.Hello.Version != "v-test" || len(r.Hello.Binary) != 64 || r.Hello.Clock == 0 {
		t.Errorf("hello: %+v", r)
	}
	if r := call(Request{Op: OpRun, Args: []string{"deploy", FileArg}}); !strings.Contains(r.Error, "no plan yet") {
		t.Errorf("a verb before the plan: %+v", r)
	}
	p := plan(t, threeHosts)
	other := strings.Replace(threeHosts, "mtu: 9000", "mtu: 1400", 1)
	if r := call(Request{Op: OpPlan, Plan: p, Host: "b", File: []byte(other)}); !strings.Contains(r.Error, "differs; run the same nslab on every host") {
		t.Errorf("a plan of another file: %+v", r)
	}
	if r := call(Request{Op: OpPlan, Plan: p, Host: "b", File: []byte(threeHosts)}); r.Error != "" {
		t.Fatalf("the plan: %+v", r)
	}
	if r := call(Request{Op: OpRun, Args: []string{"exec", "r", "sh"}}); !strings.Contains(r.Error, `verb "exec" is not one an agent runs`) {
		t.Errorf("exec: %+v", r)
	}
	if r := call(Request{Op: OpRun, Args: []string{"inspect", FileArg}}); r.Error != "" || r.Code != 0 {
		t.Errorf("a verb (/bin/true): %+v", r)
	}
	// The coordinator gone: the agent ends and removes its copy of the
	// lab's file (it was left in /tmp by every run of this test before).
	kept := filepath.Dir(a.file)
	inW.Close()
	<-served
	if _, err := os.Stat(kept); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the agent left %s: %v", kept, err)
	}
}
