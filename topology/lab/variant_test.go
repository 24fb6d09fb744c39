package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/xdpfwd"
)

// variantLab is a client, a router and a server, with a variant that
// changes everything a variant may change on the router, one that only
// the lab as deployed's own settings, and one whose before: command fails.
const variantLab = `name: v
nodes:
  c:
    interfaces:
      e0: {addresses: [10.7.1.1/24]}
    routes: [{to: default, via: 10.7.1.254}]
  r:
    forwarding: true
    sysctls: {net.ipv4.conf.all.rp_filter: 0}
    nat:
      - masquerade: e1
    interfaces:
      e0: {addresses: [10.7.1.254/24], impair: {rate: 200Mbit}, qdisc: {kind: pfifo, limit: 100}}
      e1: {addresses: [10.7.2.254/24]}
  s:
    interfaces:
      e0: {addresses: [10.7.2.1/24]}
    routes: [{to: default, via: 10.7.2.254}]
links:
  - endpoints: [c:e0, r:e0]
  - endpoints: [r:e1, s:e0]
variants:
  tuned:
    r:
      sysctls: {net.ipv4.ip_default_ttl: 33, net.ipv4.conf.all.rp_filter: 1}
      interfaces:
        e0: {impair: null}
        e1: {impair: {rate: 50Mbit}, qdisc: {kind: htb, rate: 20Mbit}, queues: 2}
      nat: []
      firewall: {policy: accept, rules: [{drop: {port: 9}}, {accept: {state: [established]}}]}
      cpus: [1]
      before: ["echo on > MARK"]
      after: ["echo off > MARK"]
  broken:
    r:
      sysctls: {net.ipv4.ip_default_ttl: 44}
      firewall: {policy: drop}
      before: ["false"]
`

func variantFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	// Not under /tmp: a node's /tmp is its own (see ns.View). /var/tmp,
	// or the package's directory where there is none (the VM).
	parent := "/var/tmp"
	if _, err := os.Stat(parent); err != nil {
		parent, _ = os.Getwd()
	}
	dir, err := os.MkdirTemp(parent, "nslab-variant-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mark := filepath.Join(dir, "mark")
	f := newFixture(t, strings.ReplaceAll(variantLab, "MARK", mark))
	f.napiBefore = napiThreads()
	f.deploy()
	return f, mark
}

// TestPrivilegedVariantAndBack: a variant changes what it names and
// nothing else (sysctls, qdiscs, the nftables table, RPS masks), its
// before: command runs; back to the lab as deployed (its after: command
// first), the lab is object by object what a fresh deploy built, and the
// state forgets the variant.
func TestPrivilegedVariantAndBack(t *testing.T) {
	labtest.CoveredOnHost(t)
	f, mark := variantFixture(t)
	fresh := snapshot(t, f)
	if !strings.Contains(fresh["r/link/e1"], " txq=2 rxq=2 ") || !strings.Contains(fresh["r/queues/e1"], "Rx:1 Tx:1 ") {
		t.Fatalf("r:e1 is not created with the 2 queues its variant uses, using 1: %s / %s", fresh["r/link/e1"], fresh["r/queues/e1"])
	}
	ctx := context.Background()
	if err := f.m.ApplyVariant(ctx, f.lab, "tuned"); err != nil {
		t.Fatal(err)
	}
	st, err := f.m.Recorded(f.lab.Name)
	if err != nil || st.Variant == nil || st.Variant.Name != "tuned" || st.Variant.Saved[savedKey("r", "sysctl", "net.ipv4.ip_default_ttl")] != "64" {
		t.Fatalf("state after the variant: %+v %v", st.Variant, err)
	}
	tuned := snapshot(t, f)
	if q := tuned["r/queues/e1"]; !strings.Contains(q, "Rx:2 Tx:2 RPS:[1 1]") {
		t.Errorf("r:e1 under the variant: %s, want 2 queues, each with RPS on cpu 1", q)
	}
	if q := fresh["r/qdisc/e0/100000/10001"] + "|" + tuned["r/qdisc/e0/10000/ffffffff"] + "|" + tuned["r/qdisc/e1/100000/10001"]; !strings.HasPrefix(q, "pfifo|pfifo|htb") {
		t.Errorf("queues (pfifo under r:e0's tbf; the variant: pfifo alone on e0, htb under e1's tbf): %q", q)
	}
	changed := diffKeys(fresh, tuned)
	for _, want := range []string{"r/sysctl/net/ipv4/ip_default_ttl", "r/sysctl/net/ipv4/conf/all/rp_filter", "r/queues/e0", "r/queues/e1", "r/qdisc/e0/", "r/qdisc/e1/", "r/nft/"} {
		if !strings.Contains(strings.Join(changed, " "), want) {
			t.Errorf("the variant did not change %s (changed: %v)", want, changed)
		}
	}
	for _, k := range changed {
		if !strings.HasPrefix(k, "r/") {
			t.Errorf("the variant changed %s, outside the router", k)
		}
	}
	if b, _ := os.ReadFile(mark); strings.TrimSpace(string(b)) != "on" {
		t.Errorf("before: did not run: %q", b)
	}
	if err := f.m.ApplyVariant(ctx, f.lab, "base"); err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, fresh, snapshot(t, f))
	if b, _ := os.ReadFile(mark); strings.TrimSpace(string(b)) != "off" {
		t.Errorf("after: did not run: %q", b)
	}
	if st, err := f.m.Recorded(f.lab.Name); err != nil || st.Variant != nil {
		t.Errorf("state after going back: %+v %v", st.Variant, err)
	}
}

// TestPrivilegedVariantFailsUndone: a variant whose before: command fails
// is undone (its sysctl and firewall gone), the error says so, and the
// lab is as deployed.
func TestPrivilegedVariantFailsUndone(t *testing.T) {
	labtest.CoveredOnHost(t)
	f, _ := variantFixture(t)
	fresh := snapshot(t, f)
	err := f.m.ApplyVariant(context.Background(), f.lab, "broken")
	if err == nil || !strings.Contains(err.Error(), `run in r (variant broken, before): false`) || !strings.Contains(err.Error(), "what it changed was undone") {
		t.Fatalf("a failing variant: %v", err)
	}
	compareSnapshots(t, fresh, snapshot(t, f))
	if st, err := f.m.Recorded(f.lab.Name); err != nil || st.Variant != nil {
		t.Errorf("state after the undone variant: %+v %v", st.Variant, err)
	}
}

// TestPrivilegedVariantAfterKill: a process killed with a variant applied
// leaves the variant in the state; another one (a new manager, as the
// next nslab run) gives the lab back from what the state saved, and
// switches from one variant to another through the lab as deployed.
func TestPrivilegedVariantAfterKill(t *testing.T) {
	labtest.CoveredOnHost(t)
	f, _ := variantFixture(t)
	fresh := snapshot(t, f)
	if err := f.m.ApplyVariant(context.Background(), f.lab, "tuned"); err != nil {
		t.Fatal(err)
	}
	next := &Manager{StateDir: f.m.StateDir}
	if err := next.ApplyVariant(context.Background(), f.lab, "nope"); err == nil || !strings.Contains(err.Error(), `no variant "nope" (its variants: base, tuned, broken)`) {
		t.Errorf("an unknown variant: %v", err)
	}
	if err := next.ApplyVariant(context.Background(), f.lab, "base"); err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, fresh, snapshot(t, f))
}

// diffKeys lists the keys whose values differ between two snapshots.
func diffKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s (new: %s)", k, v))
		}
	}
	return out
}

// TestChangeStepsOtherInterfaces: a version of the lab that lists an
// interface the other does not (lo, which a lab's model adds) changes
// nothing on it and does not fail: undoing a variant for bench, whose lab
// is the model, once panicked there.
func TestChangeStepsOtherInterfaces(t *testing.T) {
	l, err := spec.Parse("v.yaml", []byte(variantLab))
	if err != nil {
		t.Fatal(err)
	}
	model := *l
	model.Nodes = nil
	for _, n := range l.Nodes {
		c := *n
		c.Interfaces = append(slices.Clone(n.Interfaces), &spec.Interface{Name: "lo", Kind: spec.KindLoopback})
		model.Nodes = append(model.Nodes, &c)
	}
	for _, s := range changeSteps(l.Variant("tuned").Lab, &model, nil) {
		if strings.Contains(s.Name, ":lo") {
			t.Errorf("a step on lo: %s", s.Name)
		}
	}
}

// TestPrivilegedFastPathVariant: a variant gives the router the XDP fast
// path (its program on the router's interfaces, the passing one and tx
// checksumming off on their peers), pings cross it; back to the lab as
// deployed, none of it is left and the lab is what a fresh deploy built.
func TestPrivilegedFastPathVariant(t *testing.T) {
	labtest.CoveredOnHost(t)
	src := strings.SplitN(variantLab, "variants:", 2)[0] + "variants:\n  xdp:\n    r:\n      forwarding: {ipv4: true, ipv6: true, fastpath: xdp}\n"
	src = strings.Replace(src, ", impair: {rate: 200Mbit}, qdisc: {kind: pfifo, limit: 100}", "", 1)
	f := newFixture(t, src)
	f.deploy()
	fresh := snapshot(t, f)
	ctx := context.Background()
	if err := f.m.ApplyVariant(ctx, f.lab, "xdp"); err != nil {
		t.Fatal(err)
	}
	if c := f.fastPath("r"); c == nil {
		t.Fatal("no XDP fast path on r under the variant")
	}
	if on := f.txChecksum("c", "e0"); on {
		t.Error("c:e0, a peer of the router, still offloads its tx checksums")
	}
	f.ping("c", "10.7.2.1")
	if c := f.fastPath("r"); c.Forwarded() == 0 {
		t.Errorf("pings crossed the router, XDP forwarded none: %v", c)
	}
	if err := f.m.ApplyVariant(ctx, f.lab, "base"); err != nil {
		t.Fatal(err)
	}
	if c := f.fastPath("r"); c != nil || !f.txChecksum("c", "e0") || !f.txChecksum("s", "e0") {
		t.Errorf("back to the lab as deployed: fast path %v, peers' tx checksums on: %v %v", c, f.txChecksum("c", "e0"), f.txChecksum("s", "e0"))
	}
	compareSnapshots(t, fresh, snapshot(t, f))
}

// fastPath reads node's XDP fast path counters (nil: none).
func (f *fixture) fastPath(node string) xdpfwd.Counts {
	f.t.Helper()
	var c xdpfwd.Counts
	x, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		f.t.Fatal(err)
	}
	defer x.Close()
	c, err = xdpfwd.ReadNode(x)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// txChecksum reads whether interface ifc of node offloads tx checksums.
func (f *fixture) txChecksum(node, ifc string) bool {
	f.t.Helper()
	var on bool
	x, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		f.t.Fatal(err)
	}
	defer x.Close()
	err = x.Do(func() error {
		var err error
		on, err = ethtool.TxChecksum(ifc)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return on
}

// TestPrivilegedOffloads: the file's offloads are set at deploy and shown
// by inspect; a variant turns others off and back, giving the interface
// what it had (the kernel's, where neither sets one).
func TestPrivilegedOffloads(t *testing.T) {
	labtest.CoveredOnHost(t)
	src := strings.SplitN(variantLab, "variants:", 2)[0] + "variants:\n  lean:\n    r:\n      interfaces:\n        e1: {offloads: {tx-checksum: false}, napi: {gro_flush_timeout: 1ms}}\n"
	src = strings.Replace(src, "      e1: {addresses: [10.7.2.254/24]}", "      e1: {addresses: [10.7.2.254/24], offloads: {gro: true, tso: false}, napi: {threaded: true, gro_flush_timeout: 50us, defer_hard_irqs: 2}}", 1)
	f := newFixture(t, src)
	f.deploy()
	feature := func(name string) bool {
		t.Helper()
		x, err := ns.Open(f.m.netnsDir(), f.ns("r"))
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		var on bool
		if err := x.Do(func() error { on, err = ethtool.Feature("e1", name); return err }); err != nil {
			t.Fatal(err)
		}
		return on
	}
	if !feature("gro") || feature("tso") || !feature("tx-checksum") {
		t.Fatalf("r:e1 after deploy: gro %v tso %v tx %v, want gro on, tso off, tx as the kernel's (on)", feature("gro"), feature("tso"), feature("tx-checksum"))
	}
	napi := func() string {
		t.Helper()
		x, err := ns.Open(f.m.netnsDir(), f.ns("r"))
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		var v map[string]string
		if err := x.DoSysfs(func() error { v, err = inspect.ReadNAPI("e1"); return err }); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %s %s", v["gro_flush_timeout"], v["napi_defer_hard_irqs"], v["threaded"])
	}
	deployed := napi()
	if deployed != "50000 2 1" {
		t.Fatalf("r:e1's NAPI after deploy: %q, want 50000 2 1", deployed)
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	var shown string
	for _, n := range info.Nodes {
		for _, i := range n.Interfaces {
			if n.Node == "r" && i.Name == "e1" {
				shown = spec.OffloadWords(i.Offloads) + " | " + strings.Join(i.OffloadsSet, ",")
			}
		}
	}
	if !strings.HasPrefix(shown, "gro on, gso on, tso off, rx-checksum on, tx-checksum on | gro,tso") {
		t.Errorf("inspect: %q", shown)
	}
	ctx := context.Background()
	if err := f.m.ApplyVariant(ctx, f.lab, "lean"); err != nil {
		t.Fatal(err)
	}
	if !feature("gro") || feature("tx-checksum") || feature("tso") {
		t.Errorf("under the variant: gro %v tx %v tso %v, want gro on, tx and tso off", feature("gro"), feature("tx-checksum"), feature("tso"))
	}
	if got := napi(); got != "1000000 2 1" {
		t.Errorf("r:e1's NAPI under the variant: %q, want its timeout 1ms and the rest as it was", got)
	}
	if err := f.m.ApplyVariant(ctx, f.lab, "base"); err != nil {
		t.Fatal(err)
	}
	if !feature("gro") || feature("tso") || !feature("tx-checksum") || napi() != deployed {
		t.Errorf("back to the lab as deployed: gro %v tso %v tx %v, NAPI %q", feature("gro"), feature("tso"), feature("tx-checksum"), napi())
	}
}

// TestPrivilegedFastPathPlaced: on a router placed on CPU 1 by RPS, the
// XDP variant runs the program where RPS cannot move it, in its
// interfaces' NAPI: nslab makes it threaded and pins the kthreads to CPU
// 1; back to the lab as deployed, they go, and the lab is as a fresh
// deploy left it.
func TestPrivilegedFastPathPlaced(t *testing.T) {
	labtest.CoveredOnHost(t)
	if online, err := (host.Machine{}).OnlineCPUs(); err != nil || len(online) < 2 {
		t.Skipf("placement needs 2 CPUs (%v %v)", online, err)
	}
	src := strings.SplitN(variantLab, "variants:", 2)[0] + "variants:\n  xdp:\n    r:\n      forwarding: {ipv4: true, ipv6: true, fastpath: xdp}\n"
	src = strings.Replace(src, ", impair: {rate: 200Mbit}, qdisc: {kind: pfifo, limit: 100}", "", 1)
	src = strings.Replace(src, "    forwarding: true\n", "    forwarding: true\n    cpus: [1]\n", 1)
	f := newFixture(t, src)
	f.napiBefore = napiThreads()
	f.deploy()
	fresh := snapshot(t, f)
	ctx := context.Background()
	if err := f.m.ApplyVariant(ctx, f.lab, "xdp"); err != nil {
		t.Fatal(err)
	}
	for _, ifc := range []string{"e0", "e1"} {
		if got := napiAffinity(ifc, f.napiBefore); got != "[1]" {
			t.Errorf("r:%s under the XDP variant: napi kthreads on CPUs %q, want one on [1]", ifc, got)
		}
	}
	f.ping("c", "10.7.2.1")
	if c := f.fastPath("r"); c.Forwarded() == 0 {
		t.Errorf("pings crossed the router, XDP forwarded none: %v", c)
	}
	if err := f.m.ApplyVariant(ctx, f.lab, "base"); err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, fresh, snapshot(t, f))
}
