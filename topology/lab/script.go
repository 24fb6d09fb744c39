package lab

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/spec"
)

// The shell equivalents of deploy and destroy (nslab deploy|destroy
// --dry-run). Each plan step carries the iproute2 and sysctl commands that
// make the same kernel objects as its netlink calls, so the script follows
// nslab's own order, and running it with bash builds the lab nslab builds:
// same namespaces, links, MACs, MTUs, queues, markers, addresses (with
// broadcast), routes (with scope), sysctls and CPU placement. A privileged
// test compares both object by object. What the script cannot do is
// nslab's safety: it writes no state file and, with set -e, stops at the
// first failure instead of undoing the earlier steps.

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

# view_up NS MNT UTS SETUP: a mount and a UTS namespace for node NS, held in
# the files MNT and UTS (on a private mount), set up by the shell lines
# SETUP. The kernel refuses to hold a mount namespace whose id is below the
# caller's, and since Linux 6.18 ids come in per-CPU batches: a refused
# try is made again on each CPU in turn, as nslab does.
view_up() {
	local out=""
	for cpu in any $(seq 0 $(($(nproc --all) - 1))); do
		umount "$2" "$3" 2>/dev/null || true
		pin=""; [ "$cpu" = any ] || pin="taskset -c $cpu"
		out=$($pin nsenter --net="/run/netns/$1" unshare --mount="$2" --uts="$3" --propagation slave sh -ec "$4" 2>&1) && return 0
	done
	echo "$out" >&2  # the last try's words
	return 1
}
`

// DeployScript returns a bash script equivalent to deploying lab. sysfs
// is where sysfs is mounted ("" for /sys); it matters only for SR-IOV.
func DeployScript(lab *spec.Lab, sysfs string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# the deploy of lab %s from %s as iproute2 and sysctl commands,\n", lab.Name, lab.File)
	b.WriteString("# step for step in nslab's order. nslab makes the same changes through netlink,\n")
	b.WriteString("# records them in its state file first and undoes them if a step fails; this\n")
	b.WriteString("# script stops at the first failure (set -e). Remove the lab with its destroy\n")
	fmt.Fprintf(&b, "# script (of %s, or of lab %s by name: it finds the markers).\n", lab.File, lab.Name)
	b.WriteString("# The first `ip netns add` makes /run/netns a bind mount of itself with shared\n")
	b.WriteString("# propagation (mount --make-rshared); nslab, before its first namespace, makes an\n")
	b.WriteString("# empty /run/netns a tmpfs instead (mount -t tmpfs nslab-netns /run/netns), shared.\n")
	b.WriteString("set -euo pipefail\n\n")
	b.WriteString(scriptHelpers)
	if placementHelperNeeded(lab) {
		b.WriteString(napiHelper)
	}
	for i, s := range planFor(lab, sysfs) {
		fmt.Fprintf(&b, "\n# step %d: %s\n", i+1, s.Name)
		for _, line := range s.Shell() {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// DestroyScript returns a bash script equivalent to destroying lab, from
// the same plan Destroy runs (see removals). st is the lab's state, nil
// when it is not deployed; stateDir and sysfs as the Manager's.
func DestroyScript(lab *spec.Lab, st *state.State, sysfs, stateDir string) string {
	m := &Manager{Sysfs: sysfs, StateDir: stateDir}
	records := recordsOf(lab)
	if st != nil {
		records = st.Namespaces
	}
	return renderRemovals(lab.Name, m.removals(lab.Name, st, records, lab))
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
	records := []state.NSRecord(nil)
	if st != nil {
		if l, err = st.Spec(); err != nil {
			return "", err
		}
		records = st.Namespaces
	}
	if l == nil {
		return "", fmt.Errorf("lab %s is not deployed (no %s) and no file was given: use -t FILE", name, m.statePath(name))
	}
	if st == nil {
		records = recordsOf(l)
	}
	return renderRemovals(name, m.removals(name, st, records, l)), nil
}

// recordsOf lists the namespaces of a lab's file.
func recordsOf(l *spec.Lab) []state.NSRecord {
	var out []state.NSRecord
	for _, n := range l.Nodes {
		out = append(out, state.NSRecord{Node: n.Name, Name: l.Namespace(n.Name)})
	}
	return out
}

func renderRemovals(labName string, plan []removal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# the destroy of lab %s as iproute2 commands, in nslab's order.\n", labName)
	b.WriteString("# A namespace is deleted only if its lo carries the lab's marker, as nslab does.\n")
	b.WriteString("set -uo pipefail\n\n")
	b.WriteString("# owned NS MARKER: the namespace exists and its lo carries MARKER\n")
	b.WriteString("owned() { ip -n \"$1\" link show dev lo 2>/dev/null | grep \"alias $2\\$\" >/dev/null; }\n")
	step := 0
	for _, r := range plan {
		lines := r.Shell()
		if len(lines) == 0 {
			continue // nothing to do by hand (no services to stop)
		}
		step++
		fmt.Fprintf(&b, "\n# step %d: %s\n", step, r.Name)
		for _, line := range lines {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func numVFsFile(sysfs, pf string) string {
	if sysfs == "" {
		sysfs = "/sys"
	}
	return filepath.Join(sysfs, "class/net", pf, "device/sriov_numvfs")
}

// vfBackShell gives a recorded VF back to the host, as restoreVF does.
func vfBackShell(pf string, r state.VFRecord) []string {
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

// ShellQuote quotes a word the shell would split or expand (for the
// scripts nslab prints, and the exec lines of an export).
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/=+-@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
