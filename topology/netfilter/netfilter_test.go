package netfilter

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/nslab/nslab/topology/spec"
)

const lab = `name: t
nodes:
  gw:
    forwarding: true
    interfaces:
      lan0: {addresses: [192.168.10.1/24, "fd00:10::1/64"]}
      wan0: {addresses: [172.30.0.1/24]}
    nat:
      - masquerade: {out: wan0, from: 192.168.10.0/24}
      - dnat: {in: wan0, proto: udp, port: 53, to: "[fd00:10::2]:5353"}
    firewall:
      policy: drop
      rules:
        - drop: {in: lan0, to: 10.16.0.0/12}
        - accept: {state: [established, related], proto: icmpv6}
  lan:
    interfaces:
      eth0: {addresses: [192.168.10.2/24, "fd00:10::2/64"]}
  wan:
    interfaces:
      eth0: {addresses: [172.30.0.2/24]}
links:
  - endpoints: [lan:eth0, gw:lan0]
  - endpoints: [gw:wan0, wan:eth0]
`

// TestShell: the nft lines, in the order and words nft takes, with the
// chains a node's rules need and nothing else. (That they build what
// Apply builds is the lab package's script equivalence test, against
// the kernel.)
func TestShell(t *testing.T) {
	l, err := spec.Parse("t.yaml", []byte(lab))
	if err != nil {
		t.Fatal(err)
	}
	gw := l.Node("gw")
	got := strings.Join(Shell("gw", "t", gw), "\n")
	want := `ip netns exec gw nft add table inet nslab
ip netns exec gw nft add chain inet nslab prerouting '{ type nat hook prerouting priority dstnat; policy accept; }'
ip netns exec gw nft add chain inet nslab postrouting '{ type nat hook postrouting priority srcnat; policy accept; }'
ip netns exec gw nft add chain inet nslab forward '{ type filter hook forward priority filter; policy drop; }'
ip netns exec gw nft 'add rule inet nslab prerouting iifname "wan0" udp dport 53 counter dnat ip6 to [fd00:10::2]:5353 comment "nslab t nodes.gw.nat[1]"'
ip netns exec gw nft 'add rule inet nslab postrouting oifname "wan0" ip saddr 192.168.10.0/24 counter masquerade comment "nslab t nodes.gw.nat[0]"'
ip netns exec gw nft 'add rule inet nslab forward iifname "lan0" ip daddr 10.16.0.0/12 counter drop comment "nslab t nodes.gw.firewall.rules[0]"'
ip netns exec gw nft 'add rule inet nslab forward meta l4proto 58 ct state established,related counter accept comment "nslab t nodes.gw.firewall.rules[1]"'`
	if got != want {
		t.Errorf("Shell:\n%s\nwant:\n%s", got, want)
	}
	if d := Describe(gw); d != "2 NAT rules, firewall with 2 rules, policy drop" {
		t.Errorf("Describe = %q", d)
	}
	if len(Shell("lan", "t", l.Node("lan"))) != 1 || len(chainsOf(l.Node("lan"))) != 0 {
		t.Error("a node without rules gets chains")
	}
}

// TestPrefixShapes: a prefix of whole bytes loads those bytes, any other
// masks the whole address, as nft compiles them.
func TestPrefixShapes(t *testing.T) {
	for _, c := range []struct {
		prefix string
		load   uint32
		mask   bool
	}{{"10.0.0.0/8", 1, false}, {"10.16.0.0/12", 4, true}, {"10.0.0.5/32", 4, false}, {"fd00::/64", 8, false}, {"0.0.0.0/0", 4, true}} {
		m := spec.Match{To: mustPrefix(t, c.prefix)}
		exprs := compileMatch(m).exprs
		var load uint32
		mask := false
		for _, e := range exprs {
			switch x := e.(type) {
			case *expr.Payload:
				load = x.Len
			case *expr.Bitwise:
				mask = true
			}
		}
		if load != c.load || mask != c.mask {
			t.Errorf("%s: loads %d bytes (want %d), masked %v (want %v)", c.prefix, load, c.load, mask, c.mask)
		}
	}
}

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
