package labtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"

	"github.com/vishvananda/netlink"
)

// FakePF is a fake sysfs tree (under Root, standing for /sys) with one
// SR-IOV PF whose VF netdevs are real veth ends in the host namespace
// (there is no SR-IOV hardware here). The test's cleanup deletes them.
type FakePF struct {
	Root  string
	PF    string
	VFs   []string // host names of the stand-in VF netdevs
	PCIs  []string // their fake PCI addresses
	MACs  []string // their MACs when created
	Peers []string // the other ends of the stand-in veths, in the host
}

// NewFakePF builds the tree with n VFs, 8 supported and sriov_numvfs 0.
func NewFakePF(t *testing.T, n int) *FakePF {
	t.Helper()
	f := &FakePF{Root: t.TempDir(), PF: Name("pf")}
	dev := filepath.Join(f.Root, "class/net", f.PF, "device")
	check := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	check(os.MkdirAll(dev, 0o755))
	check(os.WriteFile(filepath.Join(dev, "sriov_totalvfs"), []byte("8\n"), 0o644))
	check(os.WriteFile(filepath.Join(dev, "sriov_numvfs"), []byte("0\n"), 0o644))
	for i := 0; i < n; i++ {
		name, peer := Name("vf"), Name("vp")
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		check(netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: peer}))
		f.Peers = append(f.Peers, peer)
		t.Cleanup(func() {
			if l, err := nlsafe.LinkByName(nlsafe.Caller, name); err == nil {
				if err := netlink.LinkDel(l); err != nil {
					t.Errorf("delete %s: %v", name, err)
				}
			}
		})
		l, err := nlsafe.LinkByName(nlsafe.Caller, name)
		check(err)
		f.MACs = append(f.MACs, l.Attrs().HardwareAddr.String())
		pci := fmt.Sprintf("0000:00:0%d.%d", n, i+1)
		check(os.MkdirAll(filepath.Join(f.Root, "bus/pci/devices", pci, "net", name), 0o755))
		check(os.Symlink(filepath.Join("../../../../bus/pci/devices", pci), filepath.Join(dev, fmt.Sprintf("virtfn%d", i))))
		f.VFs, f.PCIs = append(f.VFs, name), append(f.PCIs, pci)
	}
	return f
}

// NumVFs reads the PF's sriov_numvfs.
func (f *FakePF) NumVFs(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(f.Root, "class/net", f.PF, "device/sriov_numvfs"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Switch joins the stand-in VFs as a NIC's embedded switch does: their
// peers move into a throwaway namespace (under dir) and become ports of a
// bridge there, so traffic between VFs flows. The namespace goes when the
// test ends, and the veths with it.
func (f *FakePF) Switch(t *testing.T, dir string) {
	t.Helper()
	name := Namespace(t, dir)
	n, err := ns.Open(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	h := Handle(t, dir, name)
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "esw"
	br := &netlink.Bridge{LinkAttrs: attrs}
	if err := h.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Peers {
		l, err := nlsafe.LinkByName(nlsafe.Caller, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetNsFd(l, n.Fd()); err != nil {
			t.Fatal(err)
		}
		moved, err := nlsafe.LinkByName(h, p)
		if err == nil {
			err = h.LinkSetMaster(moved, br)
		}
		if err == nil {
			err = h.LinkSetUp(moved)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := h.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
}
