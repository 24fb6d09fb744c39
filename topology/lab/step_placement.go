package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// CPU placement: a node with cpus: gets its receive work on those CPUs.
// On veth the receive path otherwise runs on the sending CPU (veth_xmit
// queues the packet on the current CPU's backlog), so a router would
// forward in its sender's softirq and could never be the limit.
//
//   - receive: rps (the default) writes the node's CPU mask to rps_cpus of
//     every rx queue of its interfaces, so what arrives is queued to those
//     CPUs' backlogs (and dropped there, counted, when they are full); on
//     interfaces with several tx queues, xps_cpus spreads the CPUs over
//     them.
//   - receive: napi turns on veth NAPI (GRO) and threaded NAPI on the
//     node's interfaces and pins their napi kthreads to the CPUs. veth
//     hands a packet to its peer's NAPI only when the sending end cannot
//     have built a TSO super-packet (veth_skb_is_eligible_for_gro), so
//     the sending ends of the node's links get TSO off. A full NAPI ring
//     (256 packets) drops, counted as the sending end's tx_dropped, not
//     in softnet_stat (measured on Linux 6.18).
//
// All of it lives in the node's namespace and goes with it.

func placementSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		if !n.Placed() {
			continue
		}
		ifaces := placedInterfaces(n)
		steps = append(steps, Step{
			Name:  fmt.Sprintf("place node %s's receive work on cpu %s (%s on %s)", n.Name, n.CPUs, receiveMode(n), strings.Join(ifaces, ", ")),
			Shell: func() []string { return shPlacement(l, n, ifaces) },
			Do:    func(d *deployer) error { return d.placeNode(n, ifaces) },
			Needs: []string{n.Name + ":*"}, // taken back by rebuilding the node
		})
	}
	return steps
}

func receiveMode(n *spec.Node) string {
	if n.Receive == "" {
		return spec.ReceiveRPS
	}
	return n.Receive
}

// placedInterfaces lists the interfaces whose receive work a placement
// moves (see spec.Node.Placeable).
func placedInterfaces(n *spec.Node) []string { return n.Placeable() }

// xpsMasks spreads cpus over nq tx queues: queue q gets the CPUs at
// positions q, q+nq, ... of the list, and at least one. Nil when there is
// a single queue (XPS then chooses nothing).
func xpsMasks(cpus spec.CPUSet, nq int) []spec.CPUSet {
	if nq < 2 {
		return nil
	}
	out := make([]spec.CPUSet, nq)
	for i, c := range cpus {
		out[i%nq] = append(out[i%nq], c)
	}
	for q := range out {
		if len(out[q]) == 0 {
			out[q] = spec.CPUSet{cpus[q%len(cpus)]}
		}
	}
	return out
}

// txQueues is the tx queue count the lab gives an interface (0: unknown,
// for a VF).
func txQueues(n *spec.Node, name string) int {
	i := n.Interface(name)
	if i == nil || i.Kind == spec.KindVF {
		return 0
	}
	return max(i.Queues, 1)
}

// placeNode places node n's receive work, on a thread inside its namespace
// that sees the namespace's own sysfs, and records what it did in the
// state file.
//
// Equivalent to: ip netns exec NS sh -c 'echo MASK > /sys/class/net/IF/queues/rx-N/rps_cpus'
// (receive: rps), or ethtool -K IF gro on; echo 1 > /sys/class/net/IF/threaded;
// taskset -p MASK <napi/IF-N> (receive: napi)
func (d *deployer) placeNode(n *spec.Node, ifaces []string) error {
	rec := state.PlacementRecord{Node: n.Name, CPUs: n.CPUs.String(), Receive: receiveMode(n), Interfaces: ifaces}
	place := func() error { // in the node, with its sysfs
		for _, ifc := range ifaces {
			var err error
			if rec.Receive == spec.ReceiveNAPI {
				var pids []int
				pids, err = threadedNAPI(ifc, n.CPUs, n.Interface(ifc).Kind == spec.KindVeth)
				rec.NAPIThreads = append(rec.NAPIThreads, pids...)
			} else {
				err = rps(ifc, n.CPUs, txQueues(n, ifc))
			}
			if err != nil {
				return fmt.Errorf("place %s:%s on cpu %s: %w", n.Name, ifc, n.CPUs, err)
			}
		}
		return nil
	}
	err := d.inNS(n.Name, func(x *ns.NS) error { return x.DoSysfs(place) })
	if err == nil && rec.Receive == spec.ReceiveNAPI {
		err = d.peersWithoutTSO(n, ifaces)
	}
	if err != nil {
		return err
	}
	d.st.Placement = append(d.st.Placement, rec)
	return nil
}

// peersWithoutTSO turns TSO off on the sending end of each of the node's
// veth links, from a thread in that end's namespace, so that veth hands
// every packet to the node's NAPI.
//
// Equivalent to: ip netns exec PEER ethtool -K IF tso off
func (d *deployer) peersWithoutTSO(n *spec.Node, ifaces []string) error {
	for _, ifc := range ifaces {
		peer := n.Interface(ifc).Peer
		if peer.Node == "" {
			continue
		}
		err := d.inNS(peer.Node, func(x *ns.NS) error { return x.Do(func() error { return ethtool.SetTSO(peer.Interface, false) }) })
		if err != nil {
			return fmt.Errorf("TSO off on %s (the sending end of %s:%s): %w", peer, n.Name, ifc, err)
		}
	}
	return nil
}

// rps writes the node's CPU mask to every rx queue of ifc, and spreads it
// over the tx queues with XPS when the lab gave ifc several. It runs on a
// thread that sees the node's sysfs.
func rps(ifc string, cpus spec.CPUSet, ntx int) error {
	rx, err := filepath.Glob(filepath.Join("/sys/class/net", ifc, "queues/rx-*"))
	if err != nil || len(rx) == 0 {
		return fmt.Errorf("no rx queues under /sys/class/net/%s/queues: %v", ifc, err)
	}
	for _, q := range rx {
		if err := writeSysfs(filepath.Join(q, "rps_cpus"), cpus.Mask()); err != nil {
			return err
		}
	}
	for q, mask := range xpsMasks(cpus, ntx) {
		if err := writeSysfs(fmt.Sprintf("/sys/class/net/%s/queues/tx-%d/xps_cpus", ifc, q), mask.Mask()); err != nil {
			return err
		}
	}
	return nil
}

func writeSysfs(path, val string) error {
	if err := os.WriteFile(path, []byte(val), 0); err != nil {
		return fmt.Errorf("write %s to %s: %w", val, path, err)
	}
	return nil
}

func shPlacement(l *spec.Lab, n *spec.Node, ifaces []string) []string {
	name := l.Namespace(n.Name)
	var out []string
	for _, ifc := range ifaces {
		if receiveMode(n) == spec.ReceiveNAPI {
			i := n.Interface(ifc)
			if i.Kind == spec.KindVeth {
				out = append(out, fmt.Sprintf("ip netns exec %s ethtool -K %s gro on", name, ifc))
			}
			out = append(out, fmt.Sprintf("napi_pin %s %s %s", name, ifc, n.CPUs.Mask()))
			if i.Peer.Node != "" {
				out = append(out, fmt.Sprintf("ip netns exec %s ethtool -K %s tso off", l.Namespace(i.Peer.Node), i.Peer.Interface))
			}
			continue
		}
		out = append(out, fmt.Sprintf("ip netns exec %s sh -c 'for q in /sys/class/net/%s/queues/rx-*; do echo %s > $q/rps_cpus; done'", name, ifc, n.CPUs.Mask()))
		for q, mask := range xpsMasks(n.CPUs, txQueues(n, ifc)) {
			out = append(out, fmt.Sprintf("ip netns exec %s sh -c 'echo %s > /sys/class/net/%s/queues/tx-%d/xps_cpus'", name, mask.Mask(), ifc, q))
		}
	}
	return out
}

// napiHelper is the shell function of receive: napi (see threadedNAPI).
const napiHelper = `# napi_pin NS DEV MASK: threaded NAPI on DEV, its new napi kthreads pinned to MASK
napi_pin() {
	local before pid
	before=$(pgrep '^napi/' | sort)
	ip netns exec "$1" sh -c "echo 1 > /sys/class/net/$2/threaded"
	for pid in $(comm -13 <(echo "$before") <(pgrep '^napi/' | sort)); do
		taskset -p "$3" "$pid" >/dev/null
	done
}
`

func placementHelperNeeded(l *spec.Lab) bool {
	for _, n := range l.Nodes {
		if n.Placed() && receiveMode(n) == spec.ReceiveNAPI {
			return true
		}
	}
	return false
}
