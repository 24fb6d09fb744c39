//go:build !vmtest

// Churn is about the host kernel's netlink: the VM leaves it out.

package check

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nslab/nslab/topology/labtest"
	"github.com/nslab/nslab/topology/labtest/labdeploy"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// TestPrivilegedCheckUnderChurn: while another socket adds and deletes a
// veth pair with an address on it in the router's namespace, in a loop,
// check still finds every pair of the client-router-server lab answering,
// every time (while the churn makes 100 changes at least).
func TestPrivilegedCheckUnderChurn(t *testing.T) {
	l := labdeploy.Example(t, "client-router-server.yaml", "c")
	h := labtest.Handle(t, ns.DefaultDir, l.Namespace("ns2"))
	stop := make(chan struct{})
	var changes atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		a, _ := netlink.ParseAddr("10.254.0.1/32")
		for {
			select {
			case <-stop:
				return
			default:
			}
			v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "churn0"}, PeerName: "churn1"}
			if err := h.LinkAdd(v); err != nil {
				t.Errorf("churn: %v", err)
				return
			}
			if err := errors.Join(h.AddrAdd(v, a), h.AddrDel(v, a), h.LinkDel(v)); err != nil {
				t.Errorf("churn: %v", err)
				return
			}
			changes.Add(4)
		}
	})
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 3 || changes.Load() < 100; i++ {
		assertAllOK(t, l)
	}
}
