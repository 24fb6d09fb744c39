package lab

import (
	"fmt"
	"path/filepath"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/xdpfwd"
)

// The XDP forwarding fast path of a node (forwarding: {fastpath: xdp}):
// the program on each of its veth interfaces, and on each of their peers a
// program that passes everything (a veth receives redirected frames in
// its peer's NAPI, which only an XDP program there gives it). They live on
// the interfaces and go with them.

func fastPathSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		if n.Forwarding.FastPath != spec.FastPathXDP {
			continue
		}
		needs := []string{n.Name + ":*"}
		for _, p := range vethPeers(l, n) {
			needs = append(needs, p.Node+":"+p.Interface)
		}
		steps = append(steps, Step{
			Name: fmt.Sprintf("XDP fast path on %s's veth interfaces (bpf_fib_lookup, devmap redirect; the peers pass)%s", n.Name, xdpPlacementWords(n)),
			Shell: func() []string {
				return []string{fmt.Sprintf("# XDP fast path of %s: nslab loads it (topology/xdpfwd), ip link set dev IF xdpdrv cannot fill its devmap", n.Name)}
			},
			Do:    func(d *deployer) error { return d.fastPath(l, n, true) },
			Undo:  func(d *deployer) error { return d.fastPath(l, n, false) },
			Needs: needs,
		})
	}
	return steps
}

// xdpPlacementWords says where a placed node's fast path runs.
func xdpPlacementWords(n *spec.Node) string {
	if !n.Placed() || receiveMode(n) != spec.ReceiveRPS {
		return ""
	}
	return fmt.Sprintf("; its NAPI threaded and pinned to cpu %s, where RPS cannot move XDP", n.CPUs)
}

// vethPeers are the other ends of node n's veth links, by its interface.
func vethPeers(l *spec.Lab, n *spec.Node) map[string]spec.Endpoint {
	out := map[string]spec.Endpoint{}
	for _, k := range l.Links {
		if k.VNI != 0 {
			continue // a VXLAN interface to another host, not a veth
		}
		a, b := k.A, k.B
		switch {
		case a.Node == n.Name:
			out[a.Interface] = b
		case b.Node == n.Name:
			out[b.Interface] = a
		}
	}
	return out
}

// fastPath attaches (on) or detaches node n's XDP fast path, its
// program in n's namespace and the passing one in each peer's.
func (d *deployer) fastPath(l *spec.Lab, n *spec.Node, on bool) error {
	peers := vethPeers(l, n)
	var ports []xdpfwd.Port
	var opened []*ns.NS
	defer func() {
		for _, x := range opened {
			x.Close()
		}
	}()
	for _, i := range n.Interfaces {
		pe, ok := peers[i.Name]
		if !ok {
			continue // not a veth of the lab
		}
		peerNS, err := ns.Open(d.m.netnsDir(), l.Namespace(pe.Node))
		if err != nil {
			return fmt.Errorf("open the namespace of %s: %w", pe.Node, err)
		}
		opened = append(opened, peerNS)
		ports = append(ports, xdpfwd.Port{Index: d.ifindex(n.Name, i.Name), PeerNS: peerNS, PeerIndex: d.ifindex(pe.Node, pe.Interface), PeerName: pe.Interface})
	}
	if len(ports) == 0 {
		return fmt.Errorf("%s has no veth interface for its XDP fast path", n.Name)
	}
	return d.inNS(n.Name, func(x *ns.NS) error {
		if on {
			if err := xdpfwd.Attach(x, ports); err != nil {
				return err
			}
			return x.DoSysfs(func() error { return placeXDP(n, true) })
		}
		if err := x.DoSysfs(func() error { return placeXDP(n, false) }); err != nil {
			return err
		}
		if err := xdpfwd.Detach(x, ports); !gone(err) {
			return err
		}
		return nil
	})
}

// placeXDP keeps a placed node's fast path on its CPUs. On veth the
// program runs in the NAPI of the interface that receives, which the
// sending CPU schedules: RPS, which moves the stack's receive work,
// comes after XDP and cannot move it. So for a node placed by RPS the
// interfaces' NAPI is made threaded and its kthreads are pinned to the
// node's CPUs (as receive: napi does), and taken back (threaded off) with
// the fast path. A node placed by threaded NAPI has that already. It runs
// on a thread in the node's namespace that sees its sysfs.
func placeXDP(n *spec.Node, on bool) error {
	if !n.Placed() || receiveMode(n) != spec.ReceiveRPS {
		return nil
	}
	for _, i := range n.Interfaces {
		if i.Kind != spec.KindVeth {
			continue
		}
		var err error
		if on {
			_, err = threadedNAPI(i.Name, n.CPUs, false)
		} else {
			err = writeSysfs(filepath.Join("/sys/class/net", i.Name, "threaded"), "0")
		}
		if err != nil && !gone(err) {
			return fmt.Errorf("XDP fast path of %s:%s on cpu %s (threaded NAPI): %w", n.Name, i.Name, n.CPUs, err)
		}
	}
	return nil
}
