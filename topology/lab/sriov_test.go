package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/sriov"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// There is no SR-IOV hardware here. These tests build a fake sysfs tree
// whose virtfnN/net/<name> entries name real interfaces the test creates
// (veth ends standing in for VF netdevs), so discovery, move, rename,
// addresses, rollback and move-back run for real through netlink; the
// PF-side settings go through recordVFs, which checks the exact calls.

// recordVFs is a sriov.Control that remembers settings and every Set.
type recordVFs struct {
	mu    sync.Mutex
	state map[int]sriov.VFSettings
	calls []string
}

func newRecordVFs() *recordVFs {
	r := &recordVFs{state: map[int]sriov.VFSettings{}}
	for i := 0; i < 4; i++ {
		r.state[i] = sriov.VFSettings{MAC: fmt.Sprintf("02:00:00:00:00:%02x", i), SpoofChk: true, LinkState: netlink.VF_LINK_STATE_AUTO}
	}
	return r
}

func (r *recordVFs) Get(pf string, vf int) (sriov.VFSettings, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state[vf], nil
}

func (r *recordVFs) Set(pf string, vf int, s sriov.VFSettings) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state[vf] = s
	r.calls = append(r.calls, fmt.Sprintf("%s vf %d mac %s vlan %d qos %d spoofchk %v trust %v", pf, vf, s.MAC, s.VLAN, s.QoS, s.SpoofChk, s.Trust))
	return nil
}

// sriovFixture deploys examples/sriov-vfs.yaml on the fake PF.
func sriovFixture(t *testing.T) (*fixture, *labtest.FakePF, *recordVFs) {
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile("../../examples/sriov-vfs.yaml")
	must(t, err)
	pf := labtest.NewFakePF(t, 2)
	y := strings.ReplaceAll(string(data), "ens4f0np0", pf.PF)
	y = strings.Replace(y, "vf1: {addresses: [192.168.1.12/24]}", "vf1: {addresses: [192.168.1.12/24], mtu: 1400, mac: \"02:00:00:00:0f:01\"}", 1)
	f := newFixture(t, y)
	rec := newRecordVFs()
	f.m.Sysfs, f.m.VFs = pf.Root, rec
	return f, pf, rec
}

// assertHome checks every VF is back in the host namespace under its own
// name, MTU and MAC, without our marker, and the PF as it was.
func assertHome(t *testing.T, pf *labtest.FakePF, rec *recordVFs) {
	t.Helper()
	for i, name := range pf.VFs {
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Errorf("VF %s is not back in the host: %v", name, err)
			continue
		}
		if l.Attrs().Alias != "" || l.Attrs().MTU != 1500 || l.Attrs().HardwareAddr.String() != pf.MACs[i] {
			t.Errorf("VF %s came back with alias %q, MTU %d, MAC %s (had %s)", name, l.Attrs().Alias, l.Attrs().MTU, l.Attrs().HardwareAddr, pf.MACs[i])
		}
	}
	if got := pf.NumVFs(t); got != "0" {
		t.Errorf("sriov_numvfs is %s, want it restored to 0", got)
	}
	for i := 0; i < 2; i++ {
		if s, _ := rec.Get(pf.PF, i); s.MAC != fmt.Sprintf("02:00:00:00:00:%02x", i) || !s.SpoofChk || s.Trust || s.VLAN != 0 {
			t.Errorf("VF %d settings not restored: %+v", i, s)
		}
	}
}

func TestPrivilegedSRIOVDeployDestroy(t *testing.T) {
	f, pf, rec := sriovFixture(t)
	f.deploy()
	if got := pf.NumVFs(t); got != "2" {
		t.Errorf("sriov_numvfs %s, want 2", got)
	}
	for node, want := range map[string]string{"ns1": "vf0", "ns2": "vf1"} {
		h := f.handle(node)
		l, err := h.LinkByName(want)
		if err != nil {
			t.Fatalf("%s has no %s: %v", node, want, err)
		}
		addrs, _ := h.AddrList(l, netlink.FAMILY_V4)
		if len(addrs) != 1 || l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s:%s: addresses %v, flags %v", node, want, addrs, l.Attrs().Flags)
		}
		if want == "vf1" && (l.Attrs().MTU != 1400 || l.Attrs().HardwareAddr.String() != "02:00:00:00:0f:01") {
			t.Errorf("ns2:vf1 MTU %d MAC %s, want the node's 1400 and 02:00:00:00:0f:01", l.Attrs().MTU, l.Attrs().HardwareAddr)
		}
	}
	if _, err := netlink.LinkByName(pf.VFs[0]); err == nil {
		t.Errorf("VF %s is still in the host namespace", pf.VFs[0])
	}
	// Only VF 0 has settings, and only its MAC differs from what it had.
	want := fmt.Sprintf("%s vf 0 mac ea:0c:48:be:43:09 vlan 0 qos 0 spoofchk true trust false", pf.PF)
	if len(rec.calls) != 1 || rec.calls[0] != want {
		t.Fatalf("PF calls %q, want [%q]", rec.calls, want)
	}
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	f.assertGone()
	assertHome(t, pf, rec)
	if len(rec.calls) != 2 || !strings.Contains(rec.calls[1], "vf 0 mac 02:00:00:00:00:00") {
		t.Errorf("restore calls %q", rec.calls)
	}
}

func TestPrivilegedSRIOVRollbackEveryStep(t *testing.T) {
	f, pf, rec := sriovFixture(t)
	f.failEachStep(func() {
		f.assertGone()
		assertHome(t, pf, rec)
	})
}

// TestPrivilegedSRIOVNamespaceDeletedBySomeoneElse: the kernel hands a
// physical VF back to the host as devN when its namespace is deleted.
// veth stand-ins would be deleted instead, so the test does what the kernel
// would: moves the VF back under a dev name and updates sysfs. Destroy
// finds it by PCI address and restores its name.
func TestPrivilegedSRIOVNamespaceDeletedBySomeoneElse(t *testing.T) {
	f, pf, rec := sriovFixture(t)
	f.deploy()
	h := f.handle("ns2")
	l, err := h.LinkByName("vf1")
	must(t, err)
	devName := labtest.Name("dev")
	// Not /proc/self/ns/net: that is the main thread's namespace, and a
	// goroutine that ended locked on the main thread may have left it in
	// a lab namespace. This unlocked goroutine's thread is the host's.
	host, err := netns.Get()
	must(t, err)
	defer host.Close()
	must(t, h.LinkSetDown(l))
	must(t, h.LinkSetName(l, devName))
	must(t, h.LinkSetNsFd(l, int(host)))
	if _, err := netlink.LinkByName(devName); err != nil {
		t.Fatalf("moved %s to the host, but: %v", devName, err)
	}
	must(t, ns.Remove(f.m.netnsDir(), f.ns("ns2")))
	netDir := filepath.Join(pf.Root, "bus/pci/devices", pf.PCIs[1], "net")
	must(t, os.Rename(filepath.Join(netDir, pf.VFs[1]), filepath.Join(netDir, devName)))
	defer func() {
		if l, err := netlink.LinkByName(devName); err == nil {
			netlink.LinkDel(l)
		}
	}()
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName(pf.VFs[1]); err != nil {
		t.Errorf("VF %s was not renamed back from %s: %v", pf.VFs[1], devName, err)
	}
	if _, err := netlink.LinkByName(pf.VFs[0]); err != nil {
		t.Errorf("VF %s not moved back: %v", pf.VFs[0], err)
	}
	f.assertGone()
	_ = rec
}

// TestPrivilegedSRIOVRefusals: no PF, no SR-IOV, too many VFs: clear
// errors and nothing changed.
func TestPrivilegedSRIOVRefusals(t *testing.T) {
	f, pf, _ := sriovFixture(t)
	dev := filepath.Join(pf.Root, "class/net", pf.PF, "device")
	must(t, os.WriteFile(filepath.Join(dev, "sriov_totalvfs"), []byte("1\n"), 0o644))
	_, err := f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "supports at most 1 VFs") {
		t.Errorf("too many VFs: %v", err)
	}
	must(t, os.Remove(filepath.Join(dev, "sriov_totalvfs")))
	_, err = f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "not SR-IOV capable") {
		t.Errorf("not capable: %v", err)
	}
	f.m.Sysfs = t.TempDir()
	_, err = f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "does not exist on this machine") {
		t.Errorf("no PF: %v", err)
	}
	f.assertGone()
	if _, err := netlink.LinkByName(pf.VFs[0]); err != nil {
		t.Errorf("a refused deploy touched VF %s: %v", pf.VFs[0], err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrivilegedSRIOVNetdevTimeout: a VF whose netdev never appears (VF
// driver missing, or bound to vfio) fails the deploy with a clear error
// after a bounded wait, and everything is rolled back.
func TestPrivilegedSRIOVNetdevTimeout(t *testing.T) {
	f, pf, rec := sriovFixture(t)
	defer func(w time.Duration) { vfWait = w }(vfWait)
	vfWait = 200 * time.Millisecond
	dir := filepath.Join(pf.Root, "bus/pci/devices", pf.PCIs[1], "net")
	must(t, os.Rename(filepath.Join(dir, pf.VFs[1]), filepath.Join(pf.Root, "hidden")))
	_, err := f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "VF 1 of "+pf.PF+" has no netdev after 200ms") {
		t.Fatalf("got %v", err)
	}
	must(t, os.Rename(filepath.Join(pf.Root, "hidden"), filepath.Join(dir, pf.VFs[1])))
	f.assertGone()
	assertHome(t, pf, rec)
}
