package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/spec"
)

// runVerb runs nslab with one verb built from cmd (given a run function
// that keeps its options) and returns the error.
func runVerb(t *testing.T, cmd func() error, args ...string) {
	t.Helper()
	if err := cmd(); err != nil {
		t.Fatalf("nslab %s: %v", strings.Join(args, " "), err)
	}
}

// TestVerbOptions: each verb reads its flags and arguments into its
// options, which a test can check without running the verb.
func TestVerbOptions(t *testing.T) {
	const file = "../../examples/policy-routing.yaml"
	var d *deployOptions
	runVerb(t, func() error {
		return newApp(deployCommand(func(_ context.Context, o *deployOptions) error { d = o; return nil })).Run([]string{"nslab", "deploy", "--dry-run", file})
	}, "deploy")
	if d == nil || !d.DryRun || d.Lab.Name != "pbr" || d.Manager == nil {
		t.Errorf("deploy --dry-run FILE gave %+v", d)
	}
	var p *pathOptions
	runVerb(t, func() error {
		return newApp(pathCommand(func(_ context.Context, o *pathOptions) error { p = o; return nil })).Run([]string{"nslab", "path", "--proto", "udp", "--port", "53", file, "h2", "s"})
	}, "path")
	if p == nil || p.From.Node != "h2" || p.To.String() != "10.1.0.2" || p.Flow.Proto != "udp" || p.Flow.Port != 53 {
		t.Errorf("path --proto udp --port 53 FILE h2 s gave %+v", p)
	}
	var ck *checkOptions
	runVerb(t, func() error {
		return newApp(checkCommand(func(_ context.Context, o *checkOptions) error { ck = o; return nil })).Run([]string{"nslab", "check", "--tries", "3", "--timeout", "250ms", "--format", "list", file})
	}, "check")
	if ck == nil || ck.Tries != 3 || ck.Timeout != 250*time.Millisecond || ck.Format != "list" {
		t.Errorf("check --tries 3 --timeout 250ms --format list gave %+v", ck)
	}
	var im *impairOptions
	runVerb(t, func() error {
		return newApp(impairCommand(func(_ context.Context, o *impairOptions) error { im = o; return nil })).Run([]string{"nslab", "impair", "--delay", "20ms", "--loss", "1%", "r:u1"})
	}, "impair")
	if im == nil || im.Interface != "r:u1" || im.Impair == nil || im.Impair.Delay != 20*time.Millisecond || im.Impair.Loss != 1 {
		t.Errorf("impair --delay 20ms --loss 1%% r:u1 gave %+v", im)
	}
	var b *benchOptions
	runVerb(t, func() error {
		return newApp(benchCommand(func(_ context.Context, o *benchOptions) error { b = o; return nil })).Run([]string{"nslab", "bench", "--from", "h2:e0", "--to", "10.9.0.1", "--rate", "20kpps", "--format", "json", file})
	}, "bench")
	if b == nil || b.Request.Traffic.RatePPS != 20000 || b.Request.Traffic.From.Node != "h2" || b.Format != "json" {
		t.Errorf("bench --from h2:e0 --to 10.9.0.1 --rate 20kpps gave %+v", b)
	}
	err := newApp(benchCommand(func(context.Context, *benchOptions) error { return nil })).Run([]string{"nslab", "bench", "--from", "h2:e0", "--to", "10.9.0.1", "--rate", "20Mbps", file})
	if err == nil || !strings.Contains(flagWords(err), "--rate: ") || !strings.Contains(err.Error(), "write 20Mbit") {
		t.Errorf("bench --rate 20Mbps: %v; want the flag named and the fix", err)
	}
}

// TestRunVerbsDirectly calls the run functions of the verbs that need no
// privileges with options built by hand: no binary, no flags.
func TestRunVerbsDirectly(t *testing.T) {
	var d deployOptions
	l := mustLab(t, "../../examples/policy-routing.yaml")
	var out bytes.Buffer
	if err := runValidate(context.Background(), &validateOptions{Lab: l, Out: &out}); err != nil || !strings.Contains(out.String(), "lab pbr is valid: 4 nodes, 4 links") {
		t.Errorf("validate: %v %q", err, out.String())
	}
	out.Reset()
	d = deployOptions{Lab: l, DryRun: true, Out: &out}
	if err := runDeploy(context.Background(), &d); err != nil || !strings.Contains(out.String(), "ip -n r rule add from 10.0.2.0/24 table 100 priority 32765") {
		t.Errorf("deploy --dry-run: %v, the script has no rule line", err)
	}
	out.Reset()
	if err := runSchema(context.Background(), &schemaOptions{Out: &out}); err != nil || !bytes.Equal(out.Bytes(), spec.Schema()) {
		t.Errorf("schema: %v, %d bytes", err, out.Len())
	}
	out.Reset()
	if err := runGraph(context.Background(), &graphOptions{Lab: l, Format: "mermaid", Out: &out}); err != nil || !strings.Contains(out.String(), "\nflowchart LR\n") {
		t.Errorf("graph mermaid: %v %q", err, out.String())
	}
}

func mustLab(t *testing.T, path string) *spec.Lab {
	t.Helper()
	l, err := spec.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
