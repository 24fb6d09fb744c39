// Package xdpfwd is a node's XDP forwarding fast path: a program on each
// of the node's interfaces that looks the route up in the node's own FIB
// and neighbour table (bpf_fib_lookup) and redirects the frame through a
// devmap of the node's interfaces, passing to the stack whatever it cannot
// forward (ARP, packets to the node, TTL 1, IPv4 options and fragments, no
// neighbour yet), each counted by why.
//
// The program is attached through rtnetlink (IFLA_XDP), not a bpf_link: the
// interface then holds it after nslab exits, as it holds a qdisc, and it
// goes with the interface. Its counters are found again from the program
// an interface has (its id, its maps). On veth a redirected frame is
// received in the NAPI of its target's peer, which exists only while that
// peer has an XDP program: Attach gives every peer one that passes all.
// A frame a peer's own stack sends (a client's TCP segment) leaves with
// its checksum to fill (CHECKSUM_PARTIAL), which an XDP redirect drops on
// the way, so Attach turns the peers' transmit checksum offload off (and
// with it TSO): the stack fills every checksum itself. Detach gives both
// back.
package xdpfwd

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// Reasons name the program's counters, in the order of its enum reason.
var Reasons = []string{"forwarded", "passed: not IP (ARP, VLAN, ...)", "passed: TTL or hop limit 1", "passed: IPv4 options or a fragment, IPv6 hop-by-hop",
	"passed: to the node itself", "passed: no neighbour entry yet", "passed: no route, blackhole, unreachable, prohibited or forwarding off",
	"passed: leaves by an interface the program does not redirect to", "passed: IPv6 link-local or multicast",
	"dropped: shorter than its headers"}

// Counts are the program's counters of one node, summed over the CPUs, in
// the order of Reasons.
type Counts []uint64

// Forwarded, Passed and Dropped group them: what the program sent on,
// what it gave the stack, and what it dropped itself.
func (c Counts) Forwarded() uint64 { return c[0] }

// Passed is what the program gave the stack.
func (c Counts) Passed() uint64 {
	var n uint64
	for _, v := range c[1 : len(c)-1] {
		n += v
	}
	return n
}

// Dropped is what the program dropped itself.
func (c Counts) Dropped() uint64 { return c[len(c)-1] }

// Entered is every frame the program saw.
func (c Counts) Entered() uint64 { return c.Forwarded() + c.Passed() + c.Dropped() }

// Sub returns c - o.
func (c Counts) Sub(o Counts) Counts {
	out := make(Counts, len(c))
	for i := range c {
		out[i] = c[i] - o[i]
	}
	return out
}

// progName is the kernel's name of the forwarding program (its function's,
// at most 15 bytes), by which Read knows it.
const progName = "xdp_forward"

// Port is one interface of the node with its veth peer, if it has one
// (the peer's namespace, and its index and name there).
type Port struct {
	Index     int
	PeerNS    *ns.NS // nil: not a veth, or its peer is not the lab's
	PeerIndex int
	PeerName  string
}

// Attach loads the program, puts every port in its devmap and attaches it
// to each port, in node's namespace; each veth peer gets the passing
// program. It runs in the caller's namespace, entering node's and the
// peers' to attach.
func Attach(node *ns.NS, ports []Port) error {
	var objs fwdObjects
	if err := loadFwdObjects(&objs, nil); err != nil {
		return fmt.Errorf("load the XDP forwarding program: %w", err)
	}
	defer func() { _ = objs.Close() }() // the interfaces hold what they need
	// The kernel resolves a devmap's interface index in the namespace of
	// the thread that updates it: the node's, never the host's.
	err := node.Do(func() error {
		for _, p := range ports {
			if err := objs.Ports.Put(uint32(p.Index), uint32(p.Index)); err != nil {
				return fmt.Errorf("XDP devmap: interface %d: %w", p.Index, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range ports {
		if p.PeerNS != nil {
			if err := setXDP(p.PeerNS, p.PeerIndex, objs.XdpPass.FD()); err != nil {
				return fmt.Errorf("the peer of interface %d: %w", p.Index, err)
			}
			if err := p.PeerNS.Do(func() error { return ethtool.SetTxChecksum(p.PeerName, false) }); err != nil {
				return fmt.Errorf("the peer of interface %d: %w", p.Index, err)
			}
		}
		if err := setXDP(node, p.Index, objs.XdpForward.FD()); err != nil {
			return err
		}
	}
	return nil
}

// Detach removes the programs Attach put on node's ports and their peers.
func Detach(node *ns.NS, ports []Port) error {
	var errs []error
	for _, p := range ports {
		errs = append(errs, setXDP(node, p.Index, -1))
		if p.PeerNS != nil {
			errs = append(errs, setXDP(p.PeerNS, p.PeerIndex, -1), p.PeerNS.Do(func() error { return ethtool.SetTxChecksum(p.PeerName, true) }))
		}
	}
	return errors.Join(errs...)
}

// setXDP attaches program fd (-1: none) to interface index in n, in
// native (driver) mode, through rtnetlink from a thread in n.
func setXDP(n *ns.NS, index, fd int) error {
	err := n.Do(func() error {
		return netlink.LinkSetXdpFdWithFlags(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: index}}, fd, nl.XDP_FLAGS_DRV_MODE)
	})
	if err != nil {
		return fmt.Errorf("XDP on interface %d of %s: %w", index, n.Name, err)
	}
	return nil
}

// Read returns the counters of the forwarding program link has (nil when
// it has none of nslab's). h is a handle in link's namespace.
func Read(h *netlink.Handle, index int) (Counts, error) {
	l, err := h.LinkByIndex(index)
	if err != nil {
		return nil, err
	}
	return ReadLink(l)
}

// ReadLink is Read of an interface as a dump of the node's interfaces
// gave it (its XDP attributes as they were then).
func ReadLink(l netlink.Link) (Counts, error) {
	x := l.Attrs().Xdp
	if x == nil || !x.Attached || x.ProgId == 0 {
		return nil, nil
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(x.ProgId))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // detached since the interface was listed
	}
	if err != nil {
		return nil, fmt.Errorf("XDP program of %s: %w", l.Attrs().Name, err)
	}
	defer func() { _ = prog.Close() }() // only read
	info, err := prog.Info()
	if err != nil || info.Name != progName {
		return nil, err
	}
	ids, _ := info.MapIDs()
	for _, id := range ids {
		if c, err := countsOf(id); err != nil || c != nil {
			return c, err
		}
	}
	return nil, fmt.Errorf("XDP program of %s: no counters", l.Attrs().Name)
}

// countsOf reads map id when it is the program's counters (nil when not).
func countsOf(id ebpf.MapID) (Counts, error) {
	m, err := ebpf.NewMapFromID(id)
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.Close() }() // only read
	info, err := m.Info()
	if err != nil || info.Name != "counts" {
		return nil, err
	}
	if int(info.MaxEntries) != len(Reasons) {
		return nil, fmt.Errorf("XDP counters: %d slots, this nslab knows %d: the program is another nslab's; destroy and deploy the lab again", info.MaxEntries, len(Reasons))
	}
	out := make(Counts, len(Reasons))
	for i := range out {
		var per []uint64 // a value per possible CPU
		if err := m.Lookup(uint32(i), &per); err != nil {
			return nil, fmt.Errorf("XDP counter %d: %w", i, err)
		}
		for _, v := range per {
			out[i] += v
		}
	}
	return out, nil
}

// ReadNode returns the counters of the forwarding program on the
// interfaces of namespace n (nil when none has it), through a netlink
// socket opened in n.
func ReadNode(n *ns.NS) (Counts, error) {
	h, err := n.NetlinkHandle()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	links, err := nlsafe.LinkList(h)
	if err != nil {
		return nil, fmt.Errorf("interfaces of %s: %w", n.Name, err)
	}
	for _, l := range links {
		if c, err := ReadLink(l); err != nil || c != nil {
			return c, err
		}
	}
	return nil, nil
}
