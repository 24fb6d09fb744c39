//go:build !vmtest

// Churn is about the host kernel's netlink and nftables: the VM (emulated
// CPUs, where one ruleset read outlasts the churn's pause) leaves it out.

package lab

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// churnRuleset adds and deletes an nftables table of its own in node's
// namespace every 5 ms (400 ruleset changes a second, far more than any
// tool makes), through a connection of its own, until the test ends. It
// returns the count of changes made so far.
func (f *fixture) churnRuleset(node string) *atomic.Int64 {
	f.t.Helper()
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { n.Close() })
	nft, err := nftables.New(nftables.WithNetNSFd(n.Fd()))
	if err != nil {
		f.t.Fatal(err)
	}
	var changes atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			tb := nft.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "churn"})
			err := nft.Flush()
			nft.DelTable(tb)
			if err = errors.Join(err, nft.Flush()); err != nil {
				f.t.Errorf("churn: %v", err)
				return
			}
			changes.Add(2)
		}
	}()
	f.t.Cleanup(func() { close(stop); <-done })
	return &changes
}

// TestPrivilegedInspectUnderChurn: while something else changes the NAT
// router's links and addresses in a loop without a pause (labtest.Churn)
// and its nftables ruleset every 5 ms, inspect
// neither fails nor returns a short table: every read has the router's
// interfaces, its addresses, its routes and all of its rules; and the
// trace that path, check and bench make through it (the kernel's route
// lookup at every hop, the MACs) gives the same path every time.
func TestPrivilegedInspectUnderChurn(t *testing.T) {
	f := newFixture(t, "nat-router.yaml")
	f.deploy()
	want, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	base := *nodeInfo(want, "gw")
	run, err := f.m.Open(f.lab)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	from, to := spec.Endpoint{Node: "lan", Interface: "eth0"}, netip.MustParseAddr("172.30.0.2")
	path, err := run.Trace(from, to)
	if err != nil {
		t.Fatal(err)
	}
	links := labtest.Churn(t, labtest.Handle(t, f.m.netnsDir(), f.ns("gw")))
	rules := f.churnRuleset("gw")
	for i := range 100 {
		got, err := f.m.Store().Inspect(f.lab.Name)
		if err != nil {
			t.Fatalf("inspect %d under churn: %v", i, err)
		}
		gw := nodeInfo(got, "gw")
		if gw.Error != "" {
			t.Fatalf("inspect %d under churn: gw: %s", i, gw.Error)
		}
		if missing := missingFrom(base, *gw); missing != "" {
			t.Fatalf("inspect %d under churn: short table: %s", i, missing)
		}
		// path's and bench's reader: the kernel's route lookups and MACs.
		p, err := run.Trace(from, to)
		if err != nil || len(p.Hops) != len(path.Hops) || p.SenderMAC().String() != path.SenderMAC().String() {
			t.Fatalf("trace %d under churn: %v, %d hops (want %d)", i, err, len(p.Hops), len(path.Hops))
		}
	}
	t.Logf("%d link and address changes, %d ruleset changes during 100 inspects", links.Load(), rules.Load())
	if links.Load() == 0 || rules.Load() == 0 {
		t.Fatal("the churn changed nothing")
	}
}

// missingFrom names the first interface, address, route or rule of want
// that got lacks ("" when none).
func missingFrom(want, got inspect.NodeInfo) string {
	addrs := map[string]bool{}
	for _, ifc := range got.Interfaces {
		for _, a := range ifc.Addresses {
			addrs[ifc.Name+" "+a] = true
		}
	}
	for _, ifc := range want.Interfaces {
		for _, a := range ifc.Addresses {
			if !addrs[ifc.Name+" "+a] {
				return "address " + a + " of " + ifc.Name
			}
		}
	}
	if len(got.Routes) < len(want.Routes) {
		return "routes"
	}
	if want.Netfilter != nil && (got.Netfilter == nil || len(got.Netfilter.Rules) < len(want.Netfilter.Rules) || len(got.Netfilter.Chains) < len(want.Netfilter.Chains)) {
		return "nftables rules"
	}
	return ""
}
