package ethtool

import (
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// TestPrivilegedVeth: on a veth end created with 4 queues in a
// throwaway namespace, TSO and GRO turn off and on as asked, its queues
// go down to 2 and back to 4 and not above, and its speed is veth's
// nominal 10000 Mb/s.
func TestPrivilegedVeth(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	n := labtest.OpenNamespace(t, ns.DefaultDir)
	h := labtest.Handle(t, ns.DefaultDir, n.Name)
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.NumTxQueues, attrs.NumRxQueues = "q0", 4, 4
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "q1"}); err != nil {
		t.Fatal(err)
	}
	err := n.Do(func() error {
		for _, on := range []bool{false, true} {
			if err := SetTSO("q0", on); err != nil {
				return err
			}
			if got, err := TSO("q0"); err != nil || got != on {
				t.Errorf("TSO %v after setting %v (%v)", got, on, err)
			}
			if err := SetGRO("q0", on); err != nil {
				return err
			}
			if got, err := GRO("q0"); err != nil || got != on {
				t.Errorf("GRO %v after setting %v (%v)", got, on, err)
			}
		}
		for _, q := range []int{2, 4} {
			if err := SetQueues("q0", q); err != nil {
				t.Errorf("%d queues: %v", q, err)
			}
		}
		if err := SetQueues("q0", 5); err == nil {
			t.Error("5 queues on a veth made with 4: no error")
		}
		if s, err := Speed("q0"); err != nil || s != 10000 {
			t.Errorf("speed %d, %v", s, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := h.LinkByName("q0")
	if err != nil || l.Attrs().NumTxQueues != 4 {
		t.Errorf("q0 after: %v %v", l, err)
	}
}
