package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/netfilter"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedNATLab deploys the NAT example, whose WAN node has no
// route back to the LAN: the LAN host reaches the WAN server only through
// gw's masquerade, which stops when nslab's table is deleted by hand; the
// WAN never reaches the LAN's private addresses. The kernel's route
// lookups agree with the paths through the NAT hop (with the addresses
// rewritten), and inspect shows the rules with counters that moved.
func TestPrivilegedNATLab(t *testing.T) {
	labtest.CoveredOnHost(t)
	f := newFixture(t, "nat-router.yaml")
	f.deploy()
	f.ping("lan", "172.30.0.2")
	if got, _ := f.pings("wan", "192.168.10.2"); got != 0 {
		t.Errorf("the WAN reached the LAN's private address: %d replies", got)
	}
	for _, c := range []struct {
		from, to string
		flow     spec.Flow
	}{{"lan", "172.30.0.2", spec.Flow{}}, {"wan", "172.30.0.1", spec.Flow{Proto: "tcp", Port: 8080}}} {
		tp, err := f.m.Store().Trace(f.lab, spec.Endpoint{Node: c.from}, netip.MustParseAddr(c.to), c.flow)
		if err != nil || !tp.Deployed || len(tp.Hops) != 3 || !tp.Hops[1].SNAT.IsValid() && !tp.Hops[1].DNAT.IsValid() {
			t.Errorf("path %s -> %s (%+v): the kernel is not asked about the NAT hop, or disagrees: %+v, %v", c.from, c.to, c.flow, tp, err)
		}
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	nf := nodeInfo(info, "gw").Netfilter
	if nf == nil || nf.Missing || len(nf.Rules) != 5 {
		t.Fatalf("inspect shows gw's table as %+v", nf)
	}
	for _, r := range nf.Rules {
		if r.Path == "nodes.gw.nat[0]" && (r.Packets == 0 || r.Rule != "masquerade out wan0") {
			t.Errorf("masquerade rule as inspect shows it: %+v", r)
		}
	}
	f.deleteTable("gw")
	if got, _ := f.pings("lan", "172.30.0.2"); got != 0 {
		t.Errorf("the LAN still reaches the WAN with nslab's table deleted: %d replies", got)
	}
	if info, err = f.m.Store().Inspect(f.lab.Name); err != nil || !nodeInfo(info, "gw").Netfilter.Missing {
		t.Errorf("inspect does not see the table gone: %v", err)
	}
}

// pings sends 3 echoes from a node and returns how many came back.
func (f *fixture) pings(node, dst string) (int, error) {
	return labtest.Ping(f.m.netnsDir(), f.ns(node), netip.MustParseAddr(dst), 3, 500*time.Millisecond)
}

// deleteTable deletes nslab's table in a node as a user would, with nft
// (or through netlink where nft is not installed).
func (f *fixture) deleteTable(node string) {
	f.t.Helper()
	if _, err := exec.LookPath("nft"); err == nil {
		if out, err := exec.Command("ip", "netns", "exec", f.ns(node), "nft", "delete", "table", "inet", netfilter.Table).CombinedOutput(); err != nil {
			f.t.Fatalf("nft delete table: %v %s", err, out)
		}
		return
	}
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		f.t.Fatal(err)
	}
	defer n.Close()
	c, err := nftables.New(nftables.WithNetNSFd(n.Fd()))
	if err != nil {
		f.t.Fatal(err)
	}
	c.DelTable(&nftables.Table{Name: netfilter.Table, Family: nftables.TableFamilyINet})
	if err := c.Flush(); err != nil {
		f.t.Fatal(err)
	}
}

func nodeInfo(info *inspect.LabInfo, node string) *inspect.NodeInfo {
	for i := range info.Nodes {
		if info.Nodes[i].Node == node {
			return &info.Nodes[i]
		}
	}
	return &inspect.NodeInfo{}
}

// nftSnapshot describes every nftables table, chain and rule of a node:
// a rule by its chain, position, expressions (counters zeroed) and
// comment.
func nftSnapshot(t *testing.T, f *fixture, node string) map[string]string {
	t.Helper()
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err := nftables.New(nftables.WithNetNSFd(n.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tables, err := c.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		out[fmt.Sprintf("table/%d/%s", tb.Family, tb.Name)] = fmt.Sprintf("flags=%d", tb.Flags)
	}
	chains, err := c.ListChains()
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chains {
		key := fmt.Sprintf("chain/%d/%s/%s", ch.Table.Family, ch.Table.Name, ch.Name)
		out[key] = fmt.Sprintf("type=%s hook=%v prio=%v policy=%v", ch.Type, deref(ch.Hooknum), deref(ch.Priority), deref(ch.Policy))
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rules {
			var es []string
			for _, e := range r.Exprs {
				if ctr, ok := e.(*expr.Counter); ok {
					e = &expr.Counter{Bytes: ctr.Bytes * 0, Packets: ctr.Packets * 0}
				}
				es = append(es, fmt.Sprintf("%T%+v", e, e))
			}
			out[fmt.Sprintf("%s/rule/%d", key, i)] = fmt.Sprintf("%s comment=%q", strings.Join(es, " "), netfilter.CommentOf(r.UserData))
		}
	}
	return out
}

// nftKeys lists a snapshot's nftables keys, for a test's own check that
// the objects are there at all.
func nftKeys(snap map[string]string) []string {
	var keys []string
	for k := range snap {
		if strings.Contains(k, "/nft/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// flowtableLab is the client-router-server example with a flowtable on
// the router.
func flowtableLab(t *testing.T) *fixture {
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return newFixture(t, strings.Replace(string(data), "    forwarding: true\n", "    forwarding: true\n    flowtable: true\n", 1))
}

// hasFlowtable reports whether the kernel can hold a flowtable (the VM's
// can; our machines' kernel was built without CONFIG_NF_FLOW_TABLE).
func hasFlowtable() bool {
	return netfilter.Check("probe", &spec.Node{Name: "r", Flowtable: true, Forwarding: spec.Forwarding{IPv4: true}}) == nil
}

// TestPrivilegedFlowtableRefusedCleanly: on a kernel without the nftables
// flowtable, a lab that asks for one is refused before anything is made,
// in a line that names the key and the kernel options.
func TestPrivilegedFlowtableRefusedCleanly(t *testing.T) {
	f := flowtableLab(t)
	if hasFlowtable() {
		t.Skip("this kernel has the flowtable (the VM): TestPrivilegedFlowtable uses it")
	}
	_, err := f.m.Deploy(context.Background(), f.lab)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"nodes.ns2.flowtable: this kernel has no nftables flowtable", "CONFIG_NF_FLOW_TABLE", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	f.assertGone()
}

// TestPrivilegedFlowtable: with the flowtable on the router, a UDP flow
// of 2000 datagrams crosses it and all but its first packets skip the
// forward chain (the flow-add rule's counter, which every packet on the
// forward path passes, stays near zero); inspect shows the flowtable
// over the router's two interfaces.
func TestPrivilegedFlowtable(t *testing.T) {
	f := flowtableLab(t)
	if !hasFlowtable() {
		t.Skip("needs the nftables flowtable (CONFIG_NF_FLOW_TABLE): the VM has it")
	}
	f.deploy()
	const sent = 2000
	got, err := udpThrough(f, "ns1", "ns3", "10.0.2.1:9000", sent)
	if err != nil || got < sent-10 {
		t.Fatalf("%d of %d datagrams crossed the router (%v)", got, sent, err)
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	nf := nodeInfo(info, "ns2").Netfilter
	if nf == nil || len(nf.Flowtables) != 1 || strings.Join(nf.Flowtables[0].Devices, ",") != "veth1-peer,veth2" {
		t.Fatalf("inspect shows ns2's table as %+v", nf)
	}
	for _, r := range nf.Rules {
		t.Logf("rule %s (%s): %d packets", r.Path, r.Rule, r.Packets)
		if r.Path == "nodes.ns2.flowtable" && (r.Packets == 0 || r.Packets > 50) {
			t.Errorf("%d packets took the forward path of %d datagrams and the echoes before them: want a few (the flows' first), the rest by the flowtable", r.Packets, got)
		}
	}
}
