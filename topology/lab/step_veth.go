package lab

import (
	"errors"
	"fmt"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// One veth pair per link, each end created straight in its node's
// namespace with its name, MAC, MTU and queue count in the create message.

func vethSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, lk := range l.Links {
		steps = append(steps, Step{
			Name:  fmt.Sprintf("create veth pair %s <-> %s%s", lk.A, lk.B, queuesNote(l, lk)),
			Shell: func() []string { return shVeth(l, lk) },
			Do:    func(d *deployer) error { return d.createVeth(lk) },
			Makes: []string{lk.A.String(), lk.B.String()},
			Needs: []string{lk.A.Node, lk.B.Node},
			Undo:  func(d *deployer) error { return d.deleteLink(lk.A.Node, lk.A.Interface) },
		})
	}
	return steps
}

// vethQueues is the queue count each end of a link is created with,
// always given in the create message: the file's (queues:, or the most a
// variant gives it), else 1. Left to the kernel, a veth gets a queue per
// possible CPU and then uses one, and giving up the others waits for an
// RCU grace period while holding the RTNL lock, twice per pair: that wait
// was the largest part of making a link, and stalled every other netlink
// request of the deploy (namespaces being made) behind it.
func vethQueues(a, b *spec.Interface) (int, int) {
	return max(a.Queues, a.MaxQueues, 1), max(b.Queues, b.MaxQueues, 1)
}

// usedQueues is how many queues an interface uses: the file's (its
// variant's) count, which may be fewer than it was created with.
func usedQueues(i *spec.Interface) int {
	if i == nil {
		return 1 // an interface the other version does not list (lo)
	}
	return max(i.Queues, 1)
}

func queuesNote(l *spec.Lab, lk *spec.Link) string {
	a, b := l.Node(lk.A.Node).Interface(lk.A.Interface), l.Node(lk.B.Node).Interface(lk.B.Interface)
	qa, qb := vethQueues(a, b)
	if max(a.Queues, a.MaxQueues, b.Queues, b.MaxQueues) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d and %d rx/tx queues)", qa, qb)
}

// createVeth makes a veth pair with each end created directly in its node's
// namespace, name, MAC, MTU and queues set in the create message, both ends
// up and marked.
//
// Equivalent to: ip -n NSA link add A [address M] [mtu N] [numtxqueues Q
// numrxqueues Q] type veth peer name B netns NSB [...]; ip -n NSB link set
// B up; ip -n NSA link set A up
func (d *deployer) createVeth(l *spec.Link) error {
	na, nb := d.lab.Node(l.A.Node), d.lab.Node(l.B.Node)
	a, b := na.Interface(l.A.Interface), nb.Interface(l.B.Interface)
	ha, hb := d.handles[na.Name], d.handles[nb.Name]
	var veth *netlink.Veth
	err := d.inNS(nb.Name, func(x *ns.NS) error {
		veth = newVeth(a, b, x.Fd())
		return ha.LinkAdd(veth)
	})
	if err != nil {
		return fmt.Errorf("create veth %s <-> %s: %w%s", l.A, l.B, err, missingKind(err, "veth", "CONFIG_VETH", "veth"))
	}
	if veth.Index == 0 {
		return fmt.Errorf("create veth %s: kernel reported no index", l.A)
	}
	d.index[l.A] = veth.Index
	if err := ha.LinkSetAlias(veth, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark %s: %w", l.A, err)
	}
	peer, err := nlsafe.LinkByName(hb, b.Name)
	if err != nil {
		return fmt.Errorf("find veth end %s: %w", l.B, err)
	}
	d.index[l.B] = peer.Attrs().Index
	if err := hb.LinkSetAlias(peer, linkMarker(d.lab.Name)); err != nil {
		return fmt.Errorf("mark %s: %w", l.B, err)
	}
	for _, end := range []struct {
		n *spec.Node
		i *spec.Interface
	}{{na, a}, {nb, b}} {
		if err := d.useQueues(end.n, end.i); err != nil {
			return err
		}
	}
	// Up in this order: B first, then A. Bringing A up while B is already
	// up turns the carrier on at both ends while both are running, which
	// the kernel reports at once; any other order leaves one end's
	// operational state "down" for up to a second.
	if err := hb.LinkSetUp(peer); err != nil {
		return fmt.Errorf("set %s up: %w", l.B, err)
	}
	if err := ha.LinkSetUp(veth); err != nil {
		return fmt.Errorf("set %s up: %w", l.A, err)
	}
	return nil
}

// newVeth is the create message of the pair a <-> b, b in namespace peerNS.
func newVeth(a, b *spec.Interface, peerNS int) *netlink.Veth {
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU, attrs.HardwareAddr = a.Name, a.MTU, a.MAC
	qa, qb := vethQueues(a, b)
	attrs.NumTxQueues, attrs.NumRxQueues = qa, qa
	peerMTU := uint32(b.MTU)
	if peerMTU == 0 && a.MTU != 0 {
		peerMTU = 1500 // netlink would otherwise give the peer A's MTU
	}
	return &netlink.Veth{
		LinkAttrs: attrs, PeerName: b.Name, PeerMTU: peerMTU, PeerHardwareAddr: b.MAC,
		PeerTxQLen: -1, PeerNamespace: netlink.NsFd(peerNS),
		PeerNumTxQueues: uint32(qb), PeerNumRxQueues: uint32(qb),
	}
}

func shVeth(l *spec.Lab, lk *spec.Link) []string {
	na, nb := l.Namespace(lk.A.Node), l.Namespace(lk.B.Node)
	a, b := l.Node(lk.A.Node).Interface(lk.A.Interface), l.Node(lk.B.Node).Interface(lk.B.Interface)
	qa, qb := vethQueues(a, b)
	out := []string{
		fmt.Sprintf("ip -n %s link add %s%s type veth peer name %s netns %s%s", na, a.Name, linkOpts(a.MAC.String(), a.MTU, qa), b.Name, nb, linkOpts(b.MAC.String(), b.MTU, qb)),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", na, a.Name, linkMarker(l.Name)),
		fmt.Sprintf("ip -n %s link set dev %s alias %s", nb, b.Name, linkMarker(l.Name)),
	}
	for _, x := range []struct {
		nsName string
		i      *spec.Interface
	}{{na, a}, {nb, b}} {
		if x.i.MaxQueues > usedQueues(x.i) {
			out = append(out, shChannels(x.nsName, x.i.Name, usedQueues(x.i)))
		}
	}
	return append(out,
		fmt.Sprintf("ip -n %s link set dev %s up", nb, b.Name),
		fmt.Sprintf("ip -n %s link set dev %s up", na, a.Name),
	)
}

// useQueues sets veth end i of node n to use its file's queue count when
// it was created with more (for a variant that gives it more), from a
// thread in the node's namespace.
//
// Equivalent to: ip netns exec NS ethtool -L IF rx N tx N
func (d *deployer) useQueues(n *spec.Node, i *spec.Interface) error {
	if i.MaxQueues <= usedQueues(i) {
		return nil
	}
	return d.inNS(n.Name, func(x *ns.NS) error {
		return x.Do(func() error { return ethtool.SetQueues(i.Name, usedQueues(i)) })
	})
}

func shChannels(nsName, ifc string, q int) string {
	return fmt.Sprintf("ip netns exec %s ethtool -L %s rx %d tx %d", nsName, ifc, q, q)
}

func linkOpts(mac string, mtu, queues int) string {
	s := ""
	if mac != "" {
		s += " address " + mac
	}
	if mtu != 0 {
		s += fmt.Sprintf(" mtu %d", mtu)
	}
	if queues != 0 {
		s += fmt.Sprintf(" numtxqueues %d numrxqueues %d", queues, queues)
	}
	return s
}

// missingKind explains EOPNOTSUPP from a link create: the kernel has no
// driver for the kind (not built, or the module could not be loaded).
func missingKind(err error, kind, config, module string) string {
	if !errors.Is(err, unix.EOPNOTSUPP) {
		return ""
	}
	return fmt.Sprintf(" (this kernel has no %s devices: it needs %s, or `modprobe %s` if it is a module)", kind, config, module)
}
