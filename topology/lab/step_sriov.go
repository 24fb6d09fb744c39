package lab

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/sriov"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// SR-IOV: a PF gets the VFs the lab needs, and each VF is handed to its
// node. Every host change is recorded in the state file before it is made
// (sriov.go has the records and the way back).

func sriovSteps(l *spec.Lab, sysfs string) []Step {
	var steps []Step
	for _, pf := range l.SRIOV {
		steps = append(steps, Step{
			Name:  fmt.Sprintf("make sure PF %s has %d VFs", pf.Name, pf.NumVFs),
			Shell: func() []string { return shPF(pf, sysfs) },
			Do:    func(d *deployer) error { return d.preparePF(pf) },
		})
		for _, vf := range pf.VFs {
			steps = append(steps, Step{
				Name:  fmt.Sprintf("hand VF %d of %s to %s as %s", vf.Index, pf.Name, vf.Node, vf.Name),
				Shell: func() []string { return shVF(l, pf, vf, sysfs) },
				Do:    func(d *deployer) error { return d.handVF(pf, vf) },
			})
		}
	}
	return steps
}

// vfWait bounds the wait for VF netdevs after sriov_numvfs is written.
var vfWait = 10 * time.Second // a variable so tests can shorten it

// preparePF makes pf have at least the VFs the lab needs and records what
// it changes. It runs in the host namespace.
//
// Equivalent to: echo 0 > .../sriov_numvfs; echo N > .../sriov_numvfs
func (d *deployer) preparePF(pf *spec.PF) error {
	s := sriov.Sysfs{Root: d.m.sysfsRoot()}
	cur, err := s.ReadInt(pf.Name, "sriov_numvfs")
	if err != nil {
		return fmt.Errorf("read %s sriov_numvfs: %w", pf.Name, err)
	}
	rec := state.PFRecord{PF: pf.Name, OrigNumVFs: cur}
	if cur < pf.NumVFs {
		rec.SetNumVFs = pf.NumVFs
	}
	d.st.SRIOV = append(d.st.SRIOV, rec)
	if err := d.m.saveState(d.st); err != nil {
		return err
	}
	if rec.SetNumVFs != 0 {
		if err := s.WriteNumVFs(pf.Name, cur, pf.NumVFs); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(vfWait)
	for _, vf := range pf.VFs {
		for {
			pci, err := s.VFPCI(pf.Name, vf.Index)
			if err == nil && s.NetdevOf(pci) != "" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("VF %d of %s has no netdev after %s (is the VF driver loaded, and the VF not bound to vfio?)", vf.Index, pf.Name, vfWait)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// handVF records VF vf of pf, applies its PF-side settings, and moves its
// netdev into its node under its lab name.
//
// Equivalent to: ip link set PF vf N ...; ip link set VFDEV netns NS;
// ip -n NS link set VFDEV name NAME up
func (d *deployer) handVF(pf *spec.PF, vf *spec.VF) error {
	s := sriov.Sysfs{Root: d.m.sysfsRoot()}
	pci, err := s.VFPCI(pf.Name, vf.Index)
	if err != nil {
		return fmt.Errorf("VF %d of %s: %w", vf.Index, pf.Name, err)
	}
	host := s.NetdevOf(pci)
	link, err := nlsafe.LinkByName(nlsafe.Caller, host)
	if err != nil {
		return fmt.Errorf("VF netdev %s: %w", host, err)
	}
	rec := state.VFRecord{Index: vf.Index, PCI: pci, OrigName: host, Node: vf.Node, NS: d.lab.Namespace(vf.Node), Name: vf.Name, Moved: true,
		OrigMTU: link.Attrs().MTU, OrigAddr: link.Attrs().HardwareAddr.String()}
	// PF-side settings are read (to restore them) and written only when
	// the lab asks for some.
	var want sriov.VFSettings
	changed := false
	if hasSettings(vf) {
		orig, err := d.m.vfControl().Get(pf.Name, vf.Index)
		if err != nil {
			return err
		}
		rec.Orig = orig
		want, changed = applyVF(orig, vf)
		rec.Set = changed
	}
	pr := &d.st.SRIOV[len(d.st.SRIOV)-1]
	pr.VFs = append(pr.VFs, rec)
	if err := d.m.saveState(d.st); err != nil {
		return err
	}
	if changed {
		if err := d.m.vfControl().Set(pf.Name, vf.Index, want); err != nil {
			return err
		}
	}
	if err := d.inNS(vf.Node, func(x *ns.NS) error { return netlink.LinkSetNsFd(link, x.Fd()) }); err != nil {
		return fmt.Errorf("move VF %s into %s: %w", host, vf.Node, err)
	}
	h := d.handles[vf.Node]
	moved, err := nlsafe.LinkByName(h, host)
	if err != nil {
		return fmt.Errorf("find VF %s in %s: %w", host, vf.Node, err)
	}
	if err := h.LinkSetName(moved, vf.Name); err != nil {
		return fmt.Errorf("rename VF %s to %s in %s: %w", host, vf.Name, vf.Node, err)
	}
	if err := h.LinkSetAlias(moved, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark VF %s:%s: %w", vf.Node, vf.Name, err)
	}
	// Interface settings of its node, as for any interface.
	if i := d.lab.Node(vf.Node).Interface(vf.Name); i != nil {
		if i.MTU != 0 {
			if err := h.LinkSetMTU(moved, i.MTU); err != nil {
				return fmt.Errorf("set mtu %d on VF %s:%s: %w", i.MTU, vf.Node, vf.Name, err)
			}
		}
		if i.MAC != nil {
			if err := h.LinkSetHardwareAddr(moved, i.MAC); err != nil {
				return fmt.Errorf("set MAC %s on VF %s:%s: %w", i.MAC, vf.Node, vf.Name, err)
			}
		}
	}
	if err := h.LinkSetUp(moved); err != nil {
		return fmt.Errorf("set VF %s:%s up: %w", vf.Node, vf.Name, err)
	}
	d.index[spec.Endpoint{Node: vf.Node, Interface: vf.Name}] = moved.Attrs().Index
	return nil
}

// hasSettings reports whether the lab sets anything on the VF through its PF.
func hasSettings(vf *spec.VF) bool {
	return vf.MAC != nil || vf.VLAN != nil || vf.Trust != nil || vf.SpoofChk != nil || vf.LinkState != "" || vf.MinTxRate > 0 || vf.MaxTxRate > 0
}

// applyVF returns the settings a VF gets: its original ones with the
// lab's on top, and whether they differ.
func applyVF(orig sriov.VFSettings, vf *spec.VF) (sriov.VFSettings, bool) {
	s := orig
	if vf.MAC != nil {
		s.MAC = vf.MAC.String()
	}
	if vf.VLAN != nil {
		s.VLAN, s.QoS = *vf.VLAN, vf.QoS
	}
	if vf.SpoofChk != nil {
		s.SpoofChk = *vf.SpoofChk
	}
	if vf.Trust != nil {
		s.Trust = *vf.Trust
	}
	switch vf.LinkState {
	case "auto":
		s.LinkState = netlink.VF_LINK_STATE_AUTO
	case "enable":
		s.LinkState = netlink.VF_LINK_STATE_ENABLE
	case "disable":
		s.LinkState = netlink.VF_LINK_STATE_DISABLE
	}
	if vf.MinTxRate > 0 || vf.MaxTxRate > 0 {
		s.MinTxRate, s.MaxTxRate = uint32(vf.MinTxRate), uint32(vf.MaxTxRate)
	}
	return s, s != orig
}

func shPF(pf *spec.PF, sysfs string) []string {
	f := numVFsFile(sysfs, pf.Name)
	out := []string{
		fmt.Sprintf("if [ \"$(cat %s)\" -lt %d ]; then", f, pf.NumVFs),
		fmt.Sprintf("\t[ \"$(cat %s)\" -eq 0 ] || echo 0 > %s # drivers change a non-zero count through 0", f, f),
		fmt.Sprintf("\techo %d > %s", pf.NumVFs, f),
		"fi",
	}
	for _, vf := range pf.VFs {
		dir := filepath.Join(filepath.Dir(f), fmt.Sprintf("virtfn%d/net", vf.Index))
		out = append(out, fmt.Sprintf("for _ in $(seq 1000); do [ -n \"$(ls %s 2>/dev/null)\" ] && break; sleep 0.01; done", dir))
	}
	return out
}

func shVF(lab *spec.Lab, pf *spec.PF, vf *spec.VF, sysfs string) []string {
	ns := lab.Namespace(vf.Node)
	var out []string
	if s := vfSettingsArgs(vf); s != "" {
		out = append(out, fmt.Sprintf("ip link set dev %s vf %d%s", pf.Name, vf.Index, s))
	}
	dir := filepath.Join(filepath.Dir(numVFsFile(sysfs, pf.Name)), fmt.Sprintf("virtfn%d/net", vf.Index))
	out = append(out,
		fmt.Sprintf("vf=$(ls %s)", dir),
		fmt.Sprintf("ip link set dev \"$vf\" netns %s", ns),
		fmt.Sprintf("ip -n %s link set dev \"$vf\" name %s", ns, vf.Name),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", ns, vf.Name, linkMarker(lab.Name)))
	if i := lab.Node(vf.Node).Interface(vf.Name); i != nil {
		if i.MTU != 0 {
			out = append(out, fmt.Sprintf("ip -n %s link set dev %s mtu %d", ns, vf.Name, i.MTU))
		}
		if i.MAC != nil {
			out = append(out, fmt.Sprintf("ip -n %s link set dev %s address %s", ns, vf.Name, i.MAC))
		}
	}
	return append(out, fmt.Sprintf("ip -n %s link set dev %s up", ns, vf.Name))
}

// vfSettingsArgs renders the PF-side settings the file asks for as
// arguments of ip link set PF vf N.
func vfSettingsArgs(vf *spec.VF) string {
	var b strings.Builder
	if vf.MAC != nil {
		b.WriteString(" mac " + vf.MAC.String())
	}
	if vf.VLAN != nil {
		fmt.Fprintf(&b, " vlan %d", *vf.VLAN)
		if vf.QoS != 0 {
			fmt.Fprintf(&b, " qos %d", vf.QoS)
		}
	}
	if vf.SpoofChk != nil {
		b.WriteString(" spoofchk " + onOff(*vf.SpoofChk))
	}
	if vf.Trust != nil {
		b.WriteString(" trust " + onOff(*vf.Trust))
	}
	if vf.LinkState != "" {
		b.WriteString(" state " + vf.LinkState)
	}
	if vf.MinTxRate > 0 || vf.MaxTxRate > 0 {
		fmt.Fprintf(&b, " min_tx_rate %d max_tx_rate %d", vf.MinTxRate, vf.MaxTxRate)
	}
	return b.String()
}
