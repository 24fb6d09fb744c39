package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// routed is base with a router between a and b, for variants to change.
const routed = `name: t
nodes:
  a:
    interfaces:
      e0: {addresses: [10.0.1.1/24]}
  r:
    forwarding: true
    sysctls: {net.ipv4.conf.all.rp_filter: 0}
    interfaces:
      e0: {addresses: [10.0.1.254/24]}
      e1: {addresses: [10.0.2.254/24], impair: {rate: 10Mbit}}
links:
  - endpoints: [a:e0, r:e0]
  - endpoints: [r:e1, b:e0]
  - endpoints: [b:e1, c:e0]
`

func routedWith(variants string) string {
	return strings.Replace(routed, "links:\n", `  b:
    interfaces:
      e0: {addresses: [10.0.2.1/24]}
      e1: {}
  c:
    interfaces:
      e0: {}
links:
`, 1) + "variants:\n" + variants
}

// TestVariantParsed: a variant's lab is the file's with the variant's
// changes (sysctls merged, an impairment replaced or removed, a firewall
// added, placement), everything else as the file says.
func TestVariantParsed(t *testing.T) {
	l, err := Parse("x.yaml", []byte(routedWith(`  tuned:
    r:
      sysctls: {net.ipv4.ip_default_ttl: 33}
      interfaces:
        e1: {impair: null}
        e0: {impair: {delay: 1ms}}
      firewall: {policy: accept, rules: [{drop: {port: 9}}]}
      cpus: [1]
      before: ["echo on"]
      after: ["echo off"]
`)))
	if err != nil {
		t.Fatal(err)
	}
	v := l.Variant("tuned")
	if v == nil || l.Variant("base") == nil || l.Variant("base").Lab != l || l.Variant("nope") != nil {
		t.Fatalf("variants: %v", l.VariantNames())
	}
	r, base := v.Lab.Node("r"), l.Node("r")
	if got, _ := sysctlOf(r, "net.ipv4.conf.all.rp_filter"); got != "0" {
		t.Errorf("the file's sysctl is gone from the variant: %v", r.Sysctls)
	}
	if got, _ := sysctlOf(r, "net.ipv4.ip_default_ttl"); got != "33" || len(base.Sysctls) != 1 {
		t.Errorf("variant sysctls %v, file's %v", r.Sysctls, base.Sysctls)
	}
	if r.Interface("e1").Impair != nil || r.Interface("e0").Impair == nil || base.Interface("e1").Impair == nil || base.Interface("e0").Impair != nil {
		t.Errorf("impairments: variant e0 %v e1 %v, file's e0 %v e1 %v", r.Interface("e0").Impair, r.Interface("e1").Impair, base.Interface("e0").Impair, base.Interface("e1").Impair)
	}
	if r.Firewall == nil || base.Firewall != nil || r.CPUs.String() != "1" || base.Placed() {
		t.Errorf("firewall %v (file's %v), cpus %v (file's %v)", r.Firewall, base.Firewall, r.CPUs, base.CPUs)
	}
	if strings.Join(v.Before["r"], ";") != "echo on" || strings.Join(v.After["r"], ";") != "echo off" || strings.Join(v.Nodes, ",") != "r" {
		t.Errorf("before %v after %v nodes %v", v.Before, v.After, v.Nodes)
	}
	if len(v.Lab.Nodes) != len(l.Nodes) || len(v.Lab.Links) != len(l.Links) || v.Lab.Name != l.Name || v.Lab.SHA256 != l.SHA256 {
		t.Errorf("the variant's lab is not the file's lab changed")
	}
}

// TestVariantRules: a variant is validated like the rest of the file,
// each problem at its own line.
func TestVariantRules(t *testing.T) {
	for _, c := range []struct{ variants, where, msg string }{
		{"  tuned:\n    zz: {}\n", "x.yaml:25:5: variants.tuned.zz", "no node zz in nodes: name one of a, r, b, c"},
		{"  tuned:\n    r: {mtu: 9000}\n", "x.yaml:25:9: variants.tuned.r.mtu", "unknown key; a variant's node (what a variant may change) takes: sysctls"},
		{"  tuned:\n    r:\n      interfaces:\n        e7: {impair: {rate: 1Mbit}}\n", "x.yaml:27:9: variants.tuned.r.interfaces.e7", "node r has no interface e7"},
		{"  tuned:\n    r:\n      interfaces:\n        e0: {mtu: 9000}\n", "x.yaml:27:14: variants.tuned.r.interfaces.e0.mtu", "takes: impair"},
		{"  tuned:\n    r: {cpus: [0], receive: sometimes}\n", "x.yaml:25:29: variants.tuned.r.receive", "in variant tuned:"},
		{"  tuned:\n    r:\n      interfaces:\n        e0: {impair: {delay: fast}}\n", "x.yaml:27:30: variants.tuned.r.interfaces.e0.impair.delay", "in variant tuned:"},
		{"  tuned:\n    r: {sysctls: {net.core.netdev_budget: 600}}\n", "x.yaml:25:19: variants.tuned.r.sysctls", "not per namespace"},
		{"  tuned:\n    a: {firewall: {policy: drop}}\n", "x.yaml:25:19: variants.tuned.a.firewall", "forwards nothing"},
		{"  tuned:\n    r: {cpus: [0], receive: napi}\n", "x.yaml:25:5: variants.tuned.r", "cannot change threaded NAPI placement"},
		{"  tuned:\n    r: {before: [\"\"]}\n", "x.yaml:25:18: variants.tuned.r.before[0]", "an empty command"},
		{"  a b:\n    r: {}\n", "x.yaml:24:3: variants.a b", "variant name"},
		{"  tuned: [r]\n", "x.yaml:24:3: variants.tuned", "must be a mapping"},
	} {
		t.Run(c.where, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(routedWith(c.variants)))
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("want Problems, got %v", err)
			}
			for _, p := range ps {
				if s := p.Error(); strings.HasPrefix(s, c.where) && strings.Contains(s, c.msg) {
					return
				}
			}
			t.Errorf("no problem at %q containing %q; got:\n%v", c.where, c.msg, err)
		})
	}
}

func sysctlOf(n *Node, key string) (string, bool) {
	for _, s := range n.Sysctls {
		if s.Key == key {
			return s.Value, true
		}
	}
	return "", false
}

// TestFastPathVariant: a variant may give a node the XDP fast path, but
// not change whether it forwards.
func TestFastPathVariant(t *testing.T) {
	src := "name: v\nnodes:\n  r:\n    forwarding: true\n    interfaces:\n      e0: {addresses: [10.0.0.1/24]}\n  h:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [r:e0, h:e0]\nvariants:\n  xdp:\n    r:\n      forwarding: %s\n"
	l, err := Parse("v.yaml", []byte(fmt.Sprintf(src, "{ipv4: true, ipv6: true, fastpath: xdp}")))
	if err != nil {
		t.Fatal(err)
	}
	if v := l.Variant("xdp"); v == nil || v.Lab.Node("r").Forwarding.FastPath != FastPathXDP || l.Node("r").Forwarding.FastPath != "" {
		t.Errorf("variant xdp: %+v", v)
	}
	if _, err := Parse("v.yaml", []byte(fmt.Sprintf(src, "{ipv4: true, fastpath: xdp}"))); err == nil || !strings.Contains(err.Error(), "not whether it forwards") {
		t.Errorf("a variant that stops IPv6 forwarding: %v", err)
	}
}

// TestOffloads: an interface's offloads are read by name, an unknown one
// refused with the names there are; a variant's offloads merge over the
// interface's.
func TestOffloads(t *testing.T) {
	src := "name: o\nnodes:\n  a:\n    interfaces:\n      e0: {addresses: [10.0.0.1/24], offloads: %s}\n  b:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [a:e0, b:e0]\nvariants:\n  v:\n    a:\n      interfaces:\n        e0: {offloads: {tx-checksum: false, gro: false}}\n"
	l, err := Parse("o.yaml", []byte(fmt.Sprintf(src, "{gro: true, tso: false}")))
	if err != nil {
		t.Fatal(err)
	}
	if o := l.Node("a").Interface("e0").Offloads; len(o) != 2 || !o["gro"] || o["tso"] {
		t.Errorf("offloads %v", o)
	}
	if got := OffloadWords(l.Variant("v").Lab.Node("a").Interface("e0").Offloads); got != "gro off, tso off, tx-checksum off" {
		t.Errorf("the variant's offloads: %s", got)
	}
	if _, err := Parse("o.yaml", []byte(fmt.Sprintf(src, "{lro: true}"))); err == nil || !strings.Contains(err.Error(), "tx-checksum") {
		t.Errorf("an unknown offload: %v", err)
	}
}

// TestNAPISettings: an interface's napi: is read with its units, a
// timeout past 1s refused, and threaded refused where receive: napi
// already threads and pins the node's NAPI.
func TestNAPISettings(t *testing.T) {
	src := "name: n\nnodes:\n  a:\n%s    interfaces:\n      e0: {addresses: [10.0.0.1/24], napi: %s}\n  b:\n    interfaces:\n      e0: {addresses: [10.0.0.2/24]}\nlinks:\n  - endpoints: [a:e0, b:e0]\n"
	l, err := Parse("n.yaml", []byte(fmt.Sprintf(src, "", "{threaded: true, gro_flush_timeout: 50us, defer_hard_irqs: 2}")))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Node("a").Interface("e0").NAPI.Words(); got != "threaded on, gro_flush_timeout 50µs, defer_hard_irqs 2" {
		t.Errorf("napi: %s", got)
	}
	if _, err := Parse("n.yaml", []byte(fmt.Sprintf(src, "", "{gro_flush_timeout: 2s}"))); err == nil || !strings.Contains(err.Error(), "from 0 to 1s") {
		t.Errorf("a 2 s timeout: %v", err)
	}
	l, err = Parse("n.yaml", []byte(fmt.Sprintf(src, "", "{busy_poll: 50us}")))
	if err != nil || *l.Node("a").Interface("e0").NAPI.BusyPoll != 50*time.Microsecond {
		t.Errorf("busy_poll 50us: %v", err)
	}
	if _, err := Parse("n.yaml", []byte(fmt.Sprintf(src, "", "{busy_poll: 1500ns}"))); err == nil || !strings.Contains(err.Error(), "n.yaml:5:56: nodes.a.interfaces.e0.napi.busy_poll: busy_poll \"1500ns\": a whole number of microseconds") {
		t.Errorf("busy_poll 1500ns: %v", err)
	}
	if _, err := Parse("n.yaml", []byte(fmt.Sprintf(src, "    cpus: [0]\n    receive: napi\n", "{threaded: false}"))); err == nil || !strings.Contains(err.Error(), "leave threaded out") {
		t.Errorf("threaded under receive: napi: %v", err)
	}
}
