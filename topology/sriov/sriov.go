// Package sriov is the SR-IOV device code: a PF's VFs as sysfs shows
// them (their number, PCI functions and host netdevs) and the PF-side
// settings of each VF through rtnetlink on the PF. It runs in the host
// namespace, where the PF is. What a lab records and undoes around these
// (topology/lab) is not here.
package sriov

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/vishvananda/netlink"
)

// VFSettings are the PF-side settings of one VF.
type VFSettings struct {
	MAC       string `json:"mac,omitempty"`
	VLAN      int    `json:"vlan"`
	QoS       int    `json:"qos"`
	SpoofChk  bool   `json:"spoofchk"`
	Trust     bool   `json:"trust"`
	LinkState uint32 `json:"link_state"`
	MinTxRate uint32 `json:"min_tx_rate"`
	MaxTxRate uint32 `json:"max_tx_rate"`
}

// Control sets VF settings through their PF. The real one uses netlink
// in the host namespace; tests replace it and check the calls.
type Control interface {
	Get(pf string, vf int) (VFSettings, error)
	Set(pf string, vf int, s VFSettings) error
}

// Netlink is Control through rtnetlink on the PF, in the host namespace.
//
// Equivalent to: ip link set PF vf N mac M vlan V qos Q spoofchk on|off
// trust on|off state auto|enable|disable min_tx_rate A max_tx_rate B
type Netlink struct{}

var _ Control = Netlink{}

// Get reads VF vf's settings from its PF.
func (Netlink) Get(pf string, vf int) (VFSettings, error) {
	l, err := nlsafe.LinkByName(nlsafe.Caller, pf)
	if err != nil {
		return VFSettings{}, fmt.Errorf("PF %s: %w", pf, err)
	}
	for _, v := range l.Attrs().Vfs {
		if v.ID == vf {
			return VFSettings{MAC: v.Mac.String(), VLAN: v.Vlan, QoS: v.Qos, SpoofChk: v.Spoofchk, Trust: v.Trust != 0,
				LinkState: v.LinkState, MinTxRate: v.MinTxRate, MaxTxRate: v.MaxTxRate}, nil
		}
	}
	return VFSettings{}, fmt.Errorf("PF %s reports no VF %d", pf, vf)
}

// Set gives VF vf the settings s through its PF.
func (Netlink) Set(pf string, vf int, s VFSettings) error {
	l, err := nlsafe.LinkByName(nlsafe.Caller, pf)
	if err != nil {
		return fmt.Errorf("PF %s: %w", pf, err)
	}
	if mac, err := net.ParseMAC(s.MAC); err == nil {
		if err := netlink.LinkSetVfHardwareAddr(l, vf, mac); err != nil {
			return fmt.Errorf("PF %s VF %d mac %s: %w", pf, vf, mac, err)
		}
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"vlan", func() error { return netlink.LinkSetVfVlanQos(l, vf, s.VLAN, s.QoS) }},
		{"spoofchk", func() error { return netlink.LinkSetVfSpoofchk(l, vf, s.SpoofChk) }},
		{"trust", func() error { return netlink.LinkSetVfTrust(l, vf, s.Trust) }},
		{"state", func() error { return netlink.LinkSetVfState(l, vf, s.LinkState) }},
		{"rate", func() error { return netlink.LinkSetVfRate(l, vf, int(s.MinTxRate), int(s.MaxTxRate)) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			return fmt.Errorf("PF %s VF %d %s: %w", pf, vf, st.what, err)
		}
	}
	return nil
}

// Sysfs reads and writes the SR-IOV parts of the sysfs tree at Root
// (/sys; tests give a fake tree).
type Sysfs struct{ Root string }

// Device is the PCI device directory of netdev pf.
func (s Sysfs) Device(pf string) string { return filepath.Join(s.Root, "class/net", pf, "device") }

// ReadInt reads a number file of pf's device (sriov_numvfs, sriov_totalvfs).
func (s Sysfs) ReadInt(pf, file string) (int, error) {
	b, err := os.ReadFile(filepath.Join(s.Device(pf), file))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// VFPCI returns the PCI address of VF i of pf (the target of virtfnI).
func (s Sysfs) VFPCI(pf string, i int) (string, error) {
	p, err := filepath.EvalSymlinks(filepath.Join(s.Device(pf), fmt.Sprintf("virtfn%d", i)))
	if err != nil {
		return "", err
	}
	return filepath.Base(p), nil
}

// NetdevOf returns the name of the host netdev of a PCI function, or "".
func (s Sysfs) NetdevOf(pci string) string {
	ents, err := os.ReadDir(filepath.Join(s.Root, "bus/pci/devices", pci, "net"))
	if err != nil || len(ents) != 1 {
		return ""
	}
	return ents[0].Name()
}

// WriteNumVFs changes sriov_numvfs from cur to n, through 0 as drivers
// require when both are non-zero.
func (s Sysfs) WriteNumVFs(pf string, cur, n int) error {
	p := filepath.Join(s.Device(pf), "sriov_numvfs")
	if cur != 0 && n != 0 {
		if err := os.WriteFile(p, []byte("0"), 0); err != nil {
			return fmt.Errorf("write 0 to %s: %w", p, err)
		}
	}
	if err := os.WriteFile(p, []byte(strconv.Itoa(n)), 0); err != nil {
		return fmt.Errorf("write %d to %s: %w", n, p, err)
	}
	return nil
}
