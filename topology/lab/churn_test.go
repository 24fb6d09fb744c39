//go:build !vmtest

// Churn is about the host kernel's netlink and nftables: the VM (emulated
// CPUs, where one ruleset read outlasts the churn's pause) leaves it out.

package lab

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// churnNode changes node's namespace in a loop until stop closes, through
// a netlink handle and an nftables connection of its own: a veth pair
// added and deleted with an address on it, without a pause, and an
// nftables table of its own added and deleted every 5 ms (400 ruleset
// changes a second, far more than any tool makes). It counts its changes.
func (f *fixture) churnNode(node string, stop <-chan struct{}, changes *atomic.Int64) {
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		f.t.Error(err)
		return
	}
	defer n.Close()
	h, err := n.NetlinkHandle()
	if err != nil {
		f.t.Error(err)
		return
	}
	defer h.Close()
	nft, err := nftables.New(nftables.WithNetNSFd(n.Fd()))
	if err != nil {
		f.t.Error(err)
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for !stopped(stop) {
			tb := nft.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "churn"})
			err := nft.Flush()
			nft.DelTable(tb)
			if err = errors.Join(err, nft.Flush()); err != nil {
				f.t.Errorf("churn: %v", err)
				return
			}
			changes.Add(2)
			time.Sleep(5 * time.Millisecond)
		}
	})
	a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 254, 0, 1), Mask: net.CIDRMask(32, 32)}}
	for !stopped(stop) {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "churn0"}, PeerName: "churn1"}
		if err := h.LinkAdd(v); err != nil {
			f.t.Errorf("churn: %v", err)
			return
		}
		if err := errors.Join(h.AddrAdd(v, a), h.AddrDel(v, a), h.LinkDel(v)); err != nil {
			f.t.Errorf("churn: %v", err)
			return
		}
		changes.Add(4)
	}
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// TestPrivilegedInspectUnderChurn: while something else changes the NAT
// router's links, addresses and nftables ruleset in a loop, inspect
// neither fails nor returns a short table: every read has the router's
// interfaces, its addresses, its routes and all of its rules; and the
// trace that path, check and bench make through it (the kernel's route
// lookup at every hop, the MACs) gives the same path every time.
func TestPrivilegedInspectUnderChurn(t *testing.T) {
	f := newFixture(t, "nat-router.yaml")
	f.deploy()
	want, err := f.m.Inspect(f.lab.Name)
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
	stop := make(chan struct{})
	var changes atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { f.churnNode("gw", stop, &changes) })
	defer func() { close(stop); wg.Wait() }()
	for i := range 100 {
		got, err := f.m.Inspect(f.lab.Name)
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
	t.Logf("%d changes during 100 inspects", changes.Load())
	if changes.Load() == 0 {
		t.Fatal("the churn changed nothing")
	}
}

// missingFrom names the first interface, address, route or rule of want
// that got lacks ("" when none).
func missingFrom(want, got NodeInfo) string {
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
