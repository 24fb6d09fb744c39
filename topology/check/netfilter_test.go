package check

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/netfilter"
	"github.com/nslab/nslab/topology/spec"
)

// firewalled is the client-router-server lab with a firewall on the router
// that drops what the client sends to the server (and, the rule matching
// on the ingress and the destination alone, the server's replies to the
// client's address too). Its traffic runs are cut: validation refuses a
// run whose packets a firewall drops.
func firewalled(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, _, _ := strings.Cut(string(data), "traffic:") // the firewall drops the runs: validation refuses them
	y := strings.Replace(src, "    sysctls: {net.ipv4.conf.all.rp_filter: 0}\n",
		"    sysctls: {net.ipv4.conf.all.rp_filter: 0}\n    firewall: [{drop: {in: veth1-peer, to: 10.0.2.1}}]\n", 1)
	if y == src {
		t.Fatal("the example changed; fix the edit")
	}
	return []byte(y)
}

// TestExpectedThroughNAT: by the file alone, the LAN host reaches the WAN
// server through masquerade (the server has no route back to the LAN),
// the WAN reaches none of the LAN's private addresses, and a firewall's
// drop is a silence the file expects, with the rule named.
func TestExpectedThroughNAT(t *testing.T) {
	data, err := os.ReadFile("../../examples/nat-router.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Parse("nat.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	silent := failing(Expected(l), func(p Pair) bool { return !p.Expect })
	if want := "wan -> 192.168.10.1, wan -> 192.168.10.2"; strings.Join(silent, ", ") != want {
		t.Errorf("silent by the file: %v, want %s", silent, want)
	}
	nat := strings.Replace(string(data), "      - masquerade: wan0\n", "", 1)
	if l, err = spec.Parse("nat.yaml", []byte(nat)); err != nil {
		t.Fatal(err)
	}
	if silent := failing(Expected(l), func(p Pair) bool { return !p.Expect }); !contains(silent, "lan -> 172.30.0.2") {
		t.Errorf("without masquerade the WAN server still answers the LAN by the file: silent %v", silent)
	}
	if l, err = spec.Parse("fw.yaml", firewalled(t)); err != nil {
		t.Fatal(err)
	}
	filtered := failing(Expected(l), func(p Pair) bool { return p.Filtered })
	if want := "ns1 -> 10.0.2.1, ns3 -> 10.0.1.1"; strings.Join(filtered, ", ") != want {
		t.Errorf("filtered by the file: %v, want %s", filtered, want)
	}
	for _, p := range Expected(l) {
		if p.Filtered && (p.Expect || !strings.Contains(p.Why, "nodes.ns2.firewall[0]")) {
			t.Errorf("%s -> %s: expect %v, why %q", p.From, p.To, p.Expect, p.Why)
		}
	}
}

// TestPrivilegedCheckNAT runs check on the NAT example and on a lab whose
// router drops by a firewall rule: both pass, the drop counted as an
// expected silence. With nslab's table deleted underneath, check flags
// the change: the LAN loses the WAN, and the dropped pair answers.
func TestPrivilegedCheckNAT(t *testing.T) {
	labtest.CoveredOnHost(t)
	l := labdeploy.Example(t, "nat-router.yaml", "k")
	r := labdeploy.Open(t, l)
	pairs := probeAll(t, r)
	if b := failing(pairs, func(p Pair) bool { return !p.OK() }); len(b) != 0 {
		t.Fatalf("check fails on the NAT lab: %v", b)
	}
	deleteTable(t, r, "gw")
	if b := failing(probeAll(t, r), Pair.Broken); !contains(b, "lan -> 172.30.0.2") {
		t.Errorf("with the table gone, broken: %v", b)
	}

	f := labdeploy.Deploy(t, labtest.Rename(firewalled(t), labtest.Name("k")))
	rf := labdeploy.Open(t, f)
	pairs = probeAll(t, rf)
	if b := failing(pairs, func(p Pair) bool { return !p.OK() }); len(b) != 0 {
		t.Fatalf("check fails on the firewalled lab: %v", b)
	}
	if got := failing(pairs, func(p Pair) bool { return p.Filtered && !p.Answered }); len(got) != 2 {
		t.Errorf("silent by the firewall: %v", got)
	}
	deleteTable(t, rf, "ns2")
	if u := failing(probeAll(t, rf), Pair.Unexpected); strings.Join(u, ", ") != "ns1 -> 10.0.2.1, ns3 -> 10.0.1.1" {
		t.Errorf("with the rule gone, unexpectedly reachable: %v", u)
	}
}

func probeAll(t *testing.T, r *lab.Running) []Pair {
	t.Helper()
	pairs, err := Run(context.Background(), r.Opened, Options{Timeout: 300 * time.Millisecond, Tries: 2})
	if err != nil {
		t.Fatal(err)
	}
	return pairs
}

// deleteTable deletes nslab's table in a node behind nslab's back.
func deleteTable(t *testing.T, r *lab.Running, node string) {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(r.Node(node).NS.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	c.DelTable(&nftables.Table{Name: netfilter.Table, Family: nftables.TableFamilyINet})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}
