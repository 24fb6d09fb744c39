package spec

import (
	"strings"
	"testing"
)

const variantFromLab = `name: vf
nodes:
  client:
    interfaces:
      eth0: {addresses: [10.0.1.1/24]}
    routes: [{to: default, via: 10.0.1.254}]
  r1:
    forwarding: true
    cpus: [1]
    sysctls: {net.ipv4.conf.all.rp_filter: 0}
    interfaces:
      eth0: {addresses: [10.0.1.254/24]}
      eth1: {addresses: [10.0.2.254/24]}
    firewall:
      policy: accept
      rules:
        - drop: {from: 10.99.0.0/24}
        - drop: {from: 10.99.1.0/24}
  server:
    interfaces:
      eth0: {addresses: [10.0.2.1/24]}
    routes: [{to: default, via: 10.0.2.254}]
links:
  - endpoints: [client:eth0, r1:eth0]
  - endpoints: [r1:eth1, server:eth0]
traffic:
  - {name: cost, from: client:eth0, to: 10.0.2.1, rate: 100kpps, duration: 1s}
`

// TestVariantFrom: a baseline's lab file that differs from today's in a
// firewall rule becomes a variant of today's lab changing that node; one
// that differs in nothing measured gives none; one that differs where no
// variant reaches is refused, naming the place.
func TestVariantFrom(t *testing.T) {
	today, err := Parse("today.yaml", []byte(variantFromLab))
	if err != nil {
		t.Fatal(err)
	}
	oneRule := strings.Replace(variantFromLab, "        - drop: {from: 10.99.1.0/24}\n", "", 1)
	v, err := VariantFrom(today, "base.yaml", []byte(oneRule), "baseline")
	if err != nil || v == nil || strings.Join(v.Nodes, ",") != "r1" || len(v.Lab.Node("r1").Firewall.Rules) != 1 || len(today.Node("r1").Firewall.Rules) != 2 {
		t.Fatalf("one rule fewer: %+v, %v", v, err)
	}
	same := "# a comment\n" + strings.Replace(variantFromLab, "cpus: [1]", "cpus:\n      - 1", 1) + "tests:\n  - reachable: client -> 10.0.2.1\n"
	if v, err := VariantFrom(today, "base.yaml", []byte(same), "baseline"); v != nil || err != nil {
		t.Errorf("the same lab written otherwise: %+v, %v", v, err)
	}
	for _, x := range []struct{ from, to, want string }{
		{"10.0.2.1/24]}\n    routes", "10.0.2.9/24]}\n    routes", "nodes.server.interfaces.eth0.addresses: "},
		{"sysctls: {net.ipv4.conf.all.rp_filter: 0}", "sysctls: {}", "nodes.r1.sysctls: this lab sets net.ipv4.conf.all.rp_filter, the baseline's does not"},
		{"rate: 100kpps", "rate: 200kpps", "traffic: "},
		{"name: vf", "name: other", `name: "vf" here, "other" in the baseline's: another lab`},
		{"    forwarding: true\n", "    forwarding: true\n    receive: napi\n", "nodes.r1.receive: threaded NAPI placement differs"},
	} {
		_, err := VariantFrom(today, "base.yaml", []byte(strings.Replace(variantFromLab, x.from, x.to, 1)), "baseline")
		if err == nil || !strings.Contains(err.Error(), x.want) {
			t.Errorf("%s -> %s: %v, want %q", x.from, x.to, err, x.want)
		}
	}
}
