package lab

import (
	"context"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
)

// TestPrivilegedCheckLinkKind: the probe for a kind of device a command
// line names (one with no options) agrees with making a device of that
// kind as it is made (here bonding, VRF and IPIP are missing, in the VM
// present); a kind no kernel has is missing.
func TestPrivilegedCheckLinkKind(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	for kind, dev := range map[string]netlink.Link{
		"dummy": &netlink.Dummy{},
		"bond":  netlink.NewLinkBond(netlink.LinkAttrs{}),
		"vrf":   &netlink.Vrf{Table: 100},
		"ipip":  &netlink.Iptun{},
	} {
		dev.Attrs().Name = "probe1"
		made := ns.ScratchHandle(func(h *netlink.Handle) error { return h.LinkAdd(dev) })
		if got := checkLinkKind(kind); (got == nil) != (made == nil) {
			t.Errorf("%s: the probe says %v, making one %v", kind, got, made)
		}
	}
	if err := checkLinkKind("nosuchkind"); err == nil || !strings.Contains(err.Error(), "does not know the kind") {
		t.Errorf("a kind no kernel has: %v", err)
	}
}

// TestPrivilegedKernelRefused: a lab whose lines ask for what the kernel
// lacks is refused before anything is made, in one error naming each
// feature and the lines that ask for it.
func TestPrivilegedKernelRefused(t *testing.T) {
	script := "ip link add x0 type nosuchkind\\ntc qdisc add dev lo root nosuchqdisc\\n"
	lab := strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    exec: [\"tc qdisc add dev lo root nosuchqdisc limit 5\"]\n    startup: [\""+script+"\"]\n", 1)
	f := newFixture(t, lab)
	_, err := f.m.Deploy(context.Background(), f.lab)
	if err == nil {
		t.Fatal("deployed a lab whose lines ask for what no kernel has")
	}
	for _, want := range []string{"nothing was changed", "nosuchkind, for line 1 of node ns2's startup script (at line ", "this kernel makes no nosuchkind devices",
		"nosuchqdisc, for node ns2's exec line 1 (", ") and line 2 of node ns2's startup script", "this kernel has no nosuchqdisc qdisc"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	f.assertGone()
}
