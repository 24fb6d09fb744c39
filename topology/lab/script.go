package lab

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// The shell equivalents of deploy and destroy (nslab deploy|destroy
// --dry-run). Each plan step carries the iproute2 and sysctl commands that
// make the same kernel objects as its netlink calls, so the script follows
// nslab's own order, and running it with bash builds the lab nslab builds:
// same namespaces, links, MACs, MTUs, markers, addresses (with broadcast),
// routes (with scope) and sysctls. A privileged test compares both object
// by object. What the script cannot do is nslab's safety: it writes no
// state file and, with set -e, stops at the first failure instead of
// undoing the earlier steps.

// scriptHelpers are the shell functions the scripts use.
const scriptHelpers = `# wait_up NS DEV: wait (at most 3 s) until the kernel reports DEV operationally up
wait_up() {
	for _ in $(seq 300); do
		ip -n "$1" link show dev "$2" | grep 'state UP' >/dev/null && return 0
		sleep 0.01
	done
	echo "$2 in namespace $1 is not up after 3 s (is its peer up?)" >&2
	return 1
}
`

// DeployScript returns a bash script equivalent to deploying lab. sysfs
// is where sysfs is mounted ("" for /sys); it matters only for SR-IOV.
func DeployScript(lab *spec.Lab, sysfs string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# nslab deploy --dry-run: lab %s from %s as iproute2 and sysctl commands,\n", lab.Name, lab.File)
	b.WriteString("# step for step in nslab's order. nslab makes the same changes through netlink,\n")
	b.WriteString("# records them in its state file first and undoes them if a step fails; this\n")
	b.WriteString("# script stops at the first failure (set -e). Remove the lab with the script of\n")
	fmt.Fprintf(&b, "# nslab destroy --dry-run -t %s (or nslab destroy --name %s: it finds the markers).\n", lab.File, lab.Name)
	b.WriteString("set -euo pipefail\n\n")
	b.WriteString(scriptHelpers)
	for i, s := range planFor(lab, sysfs) {
		fmt.Fprintf(&b, "\n# step %d: %s\n", i+1, s.Name)
		for _, line := range s.Shell() {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// DestroyScript returns a bash script equivalent to destroying lab: VFs go
// back to the host first (under the names recorded in st, when the lab is
// deployed), then the namespaces nslab marked as the lab's are deleted.
// st is nil when the lab is not deployed.
func DestroyScript(lab *spec.Lab, st *State, sysfs, stateDir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# nslab destroy --dry-run: lab %s as iproute2 commands, in nslab's order.\n", lab.Name)
	b.WriteString("# A namespace is deleted only if its lo carries the lab's marker, as nslab does.\n")
	b.WriteString("set -uo pipefail\n\n")
	b.WriteString("# owned NS MARKER: the namespace exists and its lo carries MARKER\n")
	b.WriteString("owned() { ip -n \"$1\" link show dev lo 2>/dev/null | grep \"alias $2\\$\" >/dev/null; }\n")
	step := 0
	next := func(what string) { step++; fmt.Fprintf(&b, "\n# step %d: %s\n", step, what) }
	if st != nil {
		for i := len(st.SRIOV) - 1; i >= 0; i-- {
			pr := st.SRIOV[i]
			for j := len(pr.VFs) - 1; j >= 0; j-- {
				r := pr.VFs[j]
				next(fmt.Sprintf("give VF %d of %s back to the host as %s", r.Index, pr.PF, r.OrigName))
				for _, l := range vfBackShell(pr.PF, r) {
					b.WriteString(l + "\n")
				}
			}
			if pr.SetNumVFs != 0 {
				next(fmt.Sprintf("restore %s sriov_numvfs to %d", pr.PF, pr.OrigNumVFs))
				f := numVFsFile(sysfs, pr.PF)
				fmt.Fprintf(&b, "[ \"$(cat %s)\" -eq 0 ] || echo 0 > %s\n", f, f)
				if pr.OrigNumVFs != 0 {
					fmt.Fprintf(&b, "echo %d > %s\n", pr.OrigNumVFs, f)
				}
			}
		}
	} else {
		for _, pf := range lab.SRIOV {
			for _, vf := range pf.VFs {
				next(fmt.Sprintf("give VF %d of %s back to the host", vf.Index, pf.Name))
				ns := lab.Namespace(vf.Node)
				fmt.Fprintf(&b, "# (nslab renames it back to its name before deploy and restores its MTU, MAC\n# and PF-side settings, all read from its state file; the lab is not deployed now)\n")
				fmt.Fprintf(&b, "ip -n %s link set dev %s down\n", ns, vf.Name)
				fmt.Fprintf(&b, "ip -n %s link set dev %s netns 1\n", ns, vf.Name)
			}
		}
	}
	nodes := append([]*spec.Node(nil), lab.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return lab.Namespace(nodes[i].Name) < lab.Namespace(nodes[j].Name) })
	for _, n := range nodes { // in namespace-name order, as Destroy
		ns := lab.Namespace(n.Name)
		next("delete namespace " + ns)
		fmt.Fprintf(&b, "owned %s %s && ip netns del %s\n", ns, nsMarker(lab.Name, n.Name), ns)
	}
	next("forget the lab")
	fmt.Fprintf(&b, "rm -f %s\n", filepath.Join(stateDir, lab.Name+".json"))
	return b.String()
}

// Shell lines of each kind of plan step.

func shNamespace(lab *spec.Lab, n *spec.Node) []string {
	ns := lab.Namespace(n.Name)
	out := []string{
		"ip netns add " + ns,
		fmt.Sprintf("ip -n %s link set dev lo alias %s", ns, nsMarker(lab.Name, n.Name)),
		fmt.Sprintf("ip -n %s link set dev lo up", ns),
		// -e: a kernel without IPv6 has no such key, which nslab ignores too
		fmt.Sprintf("ip netns exec %s sysctl -qew net.ipv6.conf.default.disable_ipv6=1", ns),
	}
	if kvs := namespaceSysctls(n); len(kvs) > 0 {
		out = append(out, fmt.Sprintf("ip netns exec %s sysctl -qw %s", ns, shQuoteAll(kvs)))
	}
	return out
}

func shVeth(lab *spec.Lab, l *spec.Link) []string {
	na, nb := lab.Namespace(l.A.Node), lab.Namespace(l.B.Node)
	a, b := lab.Node(l.A.Node).Interface(l.A.Interface), lab.Node(l.B.Node).Interface(l.B.Interface)
	return []string{
		fmt.Sprintf("ip -n %s link add %s%s type veth peer name %s netns %s%s", na, a.Name, linkOpts(a.MAC.String(), a.MTU), b.Name, nb, linkOpts(b.MAC.String(), b.MTU)),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", na, a.Name, linkMarker(lab.Name)),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", nb, b.Name, linkMarker(lab.Name)),
		fmt.Sprintf("ip -n %s link set dev %s up", nb, b.Name),
		fmt.Sprintf("ip -n %s link set dev %s up", na, a.Name),
	}
}

func shBridge(lab *spec.Lab, n *spec.Node, br *spec.Bridge) []string {
	ns := lab.Namespace(n.Name)
	mac := ""
	if br.MAC != nil {
		mac = " address " + br.MAC.String()
	}
	out := []string{
		fmt.Sprintf("ip -n %s link add %s%s up type bridge", ns, br.Name, mac),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", ns, br.Name, linkMarker(lab.Name)),
	}
	for _, p := range br.Ports {
		out = append(out,
			fmt.Sprintf("wait_up %s %s", ns, p),
			fmt.Sprintf("ip -n %s link set dev %s master %s", ns, p, br.Name))
	}
	if br.MTU != 0 {
		out = append(out, fmt.Sprintf("ip -n %s link set dev %s mtu %d", ns, br.Name, br.MTU))
	}
	return out
}

func shNodeSettings(lab *spec.Lab, n *spec.Node) []string {
	var kvs []string
	for _, name := range ipv6Interfaces(n) {
		kvs = append(kvs, "net.ipv6.conf."+strings.ReplaceAll(name, ".", "/")+".disable_ipv6=0")
	}
	for _, s := range n.Sysctls {
		if s.Interface() != "" {
			kvs = append(kvs, s.Key+"="+s.Value)
		}
	}
	return []string{fmt.Sprintf("ip netns exec %s sysctl -qw %s", lab.Namespace(n.Name), shQuoteAll(kvs))}
}

func shAddress(lab *spec.Lab, n *spec.Node, dev string, a netip.Prefix) string {
	opt := ""
	switch {
	case a.Addr().Is6():
		opt = " nodad" // nslab adds IPv6 addresses without DAD
	case a.Bits() < 31:
		opt = " brd +" // netlink's AddrAdd sets the broadcast address too
	}
	return fmt.Sprintf("ip -n %s addr add %s%s dev %s", lab.Namespace(n.Name), a, opt, dev)
}

func shWaitUp(lab *spec.Lab) []string {
	var out []string
	for _, n := range lab.Nodes {
		var devs []string
		for _, i := range n.Interfaces {
			if i.Name != "lo" && !i.VF {
				devs = append(devs, i.Name)
			}
		}
		for _, b := range n.Bridges {
			devs = append(devs, b.Name)
		}
		for _, d := range devs {
			out = append(out, fmt.Sprintf("wait_up %s %s", lab.Namespace(n.Name), d))
		}
	}
	return out
}

func shRoute(lab *spec.Lab, n *spec.Node, r *spec.Route) string {
	fam, to := "", r.To.String()
	if r.To.Addr().Is6() {
		fam = " -6"
	}
	if r.To.Bits() == 0 {
		to = "default"
	}
	s := fmt.Sprintf("ip -n %s%s route add %s", lab.Namespace(n.Name), fam, to)
	if r.Via.IsValid() {
		s += " via " + r.Via.String()
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	if r.Metric != 0 {
		s += fmt.Sprintf(" metric %d", r.Metric)
	}
	return s
}

func numVFsFile(sysfs, pf string) string {
	if sysfs == "" {
		sysfs = "/sys"
	}
	return filepath.Join(sysfs, "class/net", pf, "device/sriov_numvfs")
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

// vfBackShell gives a recorded VF back to the host, as restoreVF does.
func vfBackShell(pf string, r VFRecord) []string {
	out := []string{
		fmt.Sprintf("if ip -n %s link show dev %s >/dev/null 2>&1; then", r.NS, r.Name),
		fmt.Sprintf("\tip -n %s link set dev %s down", r.NS, r.Name),
		fmt.Sprintf("\tip -n %s link set dev %s name %s", r.NS, r.Name, r.OrigName),
		fmt.Sprintf("\tip -n %s link set dev %s netns 1", r.NS, r.OrigName),
		"fi",
		fmt.Sprintf("ip link set dev %s alias ''", r.OrigName),
	}
	if r.OrigMTU != 0 {
		out = append(out, fmt.Sprintf("ip link set dev %s mtu %d", r.OrigName, r.OrigMTU))
	}
	if r.OrigAddr != "" {
		out = append(out, fmt.Sprintf("ip link set dev %s address %s", r.OrigName, r.OrigAddr))
	}
	if r.Set {
		o := r.Orig
		s := fmt.Sprintf("ip link set dev %s vf %d", pf, r.Index)
		if o.MAC != "" {
			s += " mac " + o.MAC
		}
		s += fmt.Sprintf(" vlan %d qos %d spoofchk %s trust %s state %s min_tx_rate %d max_tx_rate %d",
			o.VLAN, o.QoS, onOff(o.SpoofChk), onOff(o.Trust), linkStateName(o.LinkState), o.MinTxRate, o.MaxTxRate)
		out = append(out, s)
	}
	return out
}

func linkStateName(s uint32) string {
	switch s {
	case 1:
		return "enable"
	case 2:
		return "disable"
	}
	return "auto"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func linkOpts(mac string, mtu int) string {
	s := ""
	if mac != "" {
		s += " address " + mac
	}
	if mtu != 0 {
		s += fmt.Sprintf(" mtu %d", mtu)
	}
	return s
}

// shQuoteAll joins KEY=VALUE words, quoting those the shell would split.
func shQuoteAll(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shQuote(w)
	}
	return strings.Join(out, " ")
}

func shQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/=+-@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DestroyScript returns the destroy script of the lab called name: from
// its state file when it is deployed (which also knows the VFs' original
// names and settings), else from file, which may be nil when there is none.
func (m *Manager) DestroyScript(name string, file *spec.Lab) (string, error) {
	st, err := m.loadState(name)
	if err != nil {
		return "", err
	}
	l := file
	if st != nil {
		if l, err = st.Spec(); err != nil {
			return "", err
		}
	}
	if l == nil {
		return "", fmt.Errorf("lab %s is not deployed (no %s) and no file was given: use -t FILE", name, m.statePath(name))
	}
	return DestroyScript(l, st, m.Sysfs, m.stateDir()), nil
}
