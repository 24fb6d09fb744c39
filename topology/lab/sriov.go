package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/sriov"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// SR-IOV is the one place where a lab changes the host: the PF's number of
// VFs, the PF-side settings of each VF, and the VF netdevs, which move into
// the nodes. Every change is recorded in the state file before it is made,
// and destroy undoes it, VFs first (a namespace deleted with a physical
// device in it hands the device back under a dev%d name).

// checkPFs checks, without changing anything, that each PF of the lab is
// on this machine and can have the VFs asked for.
func (m *Manager) checkPFs(l *spec.Lab) []string {
	s := sriov.Sysfs{Root: m.sysfsRoot()}
	var problems []string
	for _, pf := range l.SRIOV {
		if _, err := os.Stat(filepath.Join(s.Root, "class/net", pf.Name)); err != nil {
			problems = append(problems, fmt.Sprintf("PF %s does not exist on this machine (no %s): check the interface name, or run where the NIC is", pf.Name, filepath.Join(s.Root, "class/net", pf.Name)))
			continue
		}
		total, err := s.ReadInt(pf.Name, "sriov_totalvfs")
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s is not SR-IOV capable (no sriov_totalvfs): enable SR-IOV in the BIOS and the driver, or use another PF", pf.Name))
			continue
		}
		if pf.NumVFs > total {
			problems = append(problems, fmt.Sprintf("%s supports at most %d VFs (sriov_totalvfs), not %d: lower numvfs", pf.Name, total, pf.NumVFs))
		}
		cur, _ := s.ReadInt(pf.Name, "sriov_numvfs")
		if cur != 0 && cur < pf.NumVFs {
			if busy := m.vfsInUse(s, pf.Name, cur); busy != "" {
				problems = append(problems, fmt.Sprintf("%s has %d VFs and changing that needs writing 0 first, but %s is in use: free it, or ask for at most %d VFs", pf.Name, cur, busy, cur))
			}
		}
	}
	return problems
}

// vfsInUse names a VF of pf that is in use (its netdev up, or not in the
// host namespace), or "".
func (m *Manager) vfsInUse(s sriov.Sysfs, pf string, n int) string {
	for i := 0; i < n; i++ {
		pci, err := s.VFPCI(pf, i)
		if err != nil {
			continue
		}
		name := s.NetdevOf(pci)
		if name == "" {
			return fmt.Sprintf("VF %d (%s, not in the host namespace)", i, pci)
		}
		if l, err := nlsafe.LinkByName(nlsafe.Caller, name); err == nil && l.Attrs().Flags&net.FlagUp != 0 {
			return fmt.Sprintf("VF %d (%s, up)", i, name)
		}
	}
	return ""
}

// restoreSRIOV gives every recorded VF back to the host under its original
// name with its original settings, and restores sriov_numvfs: the VF part
// of a destroy plan, run on its own by a failed deploy's rollback. It tries
// everything and returns every error.
func (m *Manager) restoreSRIOV(st *state.State) error {
	var errs []error
	for _, r := range m.vfRemovals(st) {
		errs = append(errs, r.Do(nil))
	}
	return errors.Join(errs...)
}

// restoreNumVFs puts a PF's sriov_numvfs back to what it was before.
func restoreNumVFs(s sriov.Sysfs, pr state.PFRecord) error {
	cur, err := s.ReadInt(pr.PF, "sriov_numvfs")
	if err == nil && cur != pr.OrigNumVFs {
		err = s.WriteNumVFs(pr.PF, cur, pr.OrigNumVFs)
	}
	return err
}

func shNumVFsBack(sysfsRoot string, pr state.PFRecord) []string {
	f := numVFsFile(sysfsRoot, pr.PF)
	out := []string{fmt.Sprintf("[ \"$(cat %s)\" -eq 0 ] || echo 0 > %s", f, f)}
	if pr.OrigNumVFs != 0 {
		out = append(out, fmt.Sprintf("echo %d > %s", pr.OrigNumVFs, f))
	}
	return out
}

// restoreVF gives one recorded VF back to the host: moved home if still in
// its node, found by PCI address (the kernel may have returned it as
// devN), renamed, its MTU and MAC and PF-side settings restored.
func (m *Manager) restoreVF(s sriov.Sysfs, labName, pf string, r state.VFRecord) error {
	if r.Moved {
		if err := m.vfHome(r, labName); err != nil {
			return err
		}
		cur := s.NetdevOf(r.PCI)
		if cur == "" {
			return fmt.Errorf("VF %d of %s (%s) is not in the host namespace and not in %s", r.Index, pf, r.PCI, r.NS)
		}
		if err := renameHostVF(cur, r.OrigName); err != nil {
			return err
		}
		if err := restoreHostVF(r); err != nil {
			return err
		}
	}
	if r.Set {
		if err := m.vfControl().Set(pf, r.Index, r.Orig); err != nil {
			return fmt.Errorf("restore VF %d of %s: %w", r.Index, pf, err)
		}
	}
	return nil
}

// renameHostVF gives a VF back its name in the host (down first: a
// running link cannot be renamed).
func renameHostVF(cur, orig string) error {
	if cur == orig {
		return nil
	}
	l, err := nlsafe.LinkByName(nlsafe.Caller, cur)
	if err == nil {
		if err = netlink.LinkSetDown(l); err == nil {
			err = netlink.LinkSetName(l, orig)
		}
	}
	if err != nil {
		return fmt.Errorf("rename VF %s back to %s: %w", cur, orig, err)
	}
	return nil
}

// restoreHostVF puts back what the lab changed on a VF netdev in the
// host: its marker, MTU and MAC.
func restoreHostVF(r state.VFRecord) error {
	l, err := nlsafe.LinkByName(nlsafe.Caller, r.OrigName)
	if err != nil {
		return fmt.Errorf("VF %s: %w", r.OrigName, err)
	}
	var errs []error
	if strings.HasPrefix(l.Attrs().Alias, markerPrefix) {
		errs = append(errs, netlink.LinkSetAlias(l, ""))
	}
	if r.OrigMTU != 0 && l.Attrs().MTU != r.OrigMTU {
		errs = append(errs, netlink.LinkSetMTU(l, r.OrigMTU))
	}
	if mac, err := net.ParseMAC(r.OrigAddr); err == nil && l.Attrs().HardwareAddr.String() != r.OrigAddr {
		errs = append(errs, netlink.LinkSetHardwareAddr(l, mac))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("restore VF %s: %w", r.OrigName, err)
	}
	return nil
}

// vfHome moves a VF from its node back to the host namespace, if it is
// still in the node (found by its lab name and this lab's marker).
func (m *Manager) vfHome(r state.VFRecord, labName string) error {
	n, err := ns.Open(m.netnsDir(), r.NS)
	if err != nil {
		return nil // the namespace is gone: the kernel gave the VF back
	}
	defer n.Close()
	h, err := n.NetlinkHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := nlsafe.LinkByName(h, r.Name)
	if err != nil || l.Attrs().Alias != linkMarker(labName) {
		return nil // not there, or not ours
	}
	host, err := netns.Get()
	if err != nil {
		return fmt.Errorf("open the host namespace: %w", err)
	}
	defer func() { _ = host.Close() }() // a descriptor only read
	if err := h.LinkSetDown(l); err != nil {
		return fmt.Errorf("set VF %s:%s down: %w", r.Node, r.Name, err)
	}
	if err := h.LinkSetName(l, r.OrigName); err != nil {
		return fmt.Errorf("rename VF %s:%s back to %s: %w", r.Node, r.Name, r.OrigName, err)
	}
	if err := h.LinkSetNsFd(l, int(host)); err != nil {
		return fmt.Errorf("move VF %s back to the host: %w", r.OrigName, err)
	}
	return nil
}
