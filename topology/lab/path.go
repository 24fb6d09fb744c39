package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TracedPath is the path from a node to an address, as the lab's file
// says (spec.Lab.Trace), with the MAC of each hop's next-hop interface and,
// when the lab is deployed, confirmed by the kernel's own route lookup in
// every namespace on the way. nslab path prints it; nslab bench takes its
// destination MAC and measured interfaces from it, so both agree.
type TracedPath struct {
	*spec.Path
	From spec.Endpoint `json:"from"`
	To   netip.Addr    `json:"to"`
	// Source is the sender's source address: the kernel's choice when
	// deployed, else the first address of the egress of the right family.
	Source netip.Addr `json:"source,omitzero"`
	// MACs[i] is the MAC of Hops[i].Next (nil where a hop does not route,
	// or a VF's MAC before it is deployed).
	MACs []net.HardwareAddr `json:"-"`
	// Deployed: the lab's namespaces exist, and the kernel agreed at every
	// routing hop (otherwise Trace returns a *KernelDisagrees error).
	Deployed bool `json:"deployed"`
	// NotAsked says why the kernel was not asked although the lab's
	// namespaces exist (they cannot be entered without root).
	NotAsked string `json:"not_asked,omitempty"`
}

// KernelDisagrees lists the hops where a deployed lab's kernel routes
// differently from what the file says (a route changed by hand, or a
// sysctl that stops forwarding).
type KernelDisagrees struct {
	Path     *TracedPath
	Problems []string
}

func (e *KernelDisagrees) Error() string {
	return fmt.Sprintf("the kernel disagrees with the lab's file about the path to %s: %s", e.Path.To, strings.Join(e.Problems, "; "))
}

// Trace computes the path from from (a node, or node:interface) to to
// from the lab's file and, if the lab is deployed, checks every routing
// hop with the kernel's route lookup in that hop's namespace: the sender's
// as a locally sent packet, every router's as a packet arriving on its
// ingress from the sender's source address (so forwarding and reverse-path
// filtering count). MACs are read from the kernel when deployed, from the
// file otherwise. It runs in the caller's namespace and enters none.
func (m *Manager) Trace(l *spec.Lab, from spec.Endpoint, to netip.Addr) (*TracedPath, error) {
	p, err := l.Trace(from, to)
	if err != nil {
		return nil, err
	}
	tp := &TracedPath{Path: p, From: spec.Endpoint{Node: from.Node, Interface: p.Hops[0].Out}, To: to, MACs: make([]net.HardwareAddr, len(p.Hops))}
	if p.Local {
		tp.From.Interface = p.Dest.Interface
	}
	handles, closeAll, deployed := m.labHandles(l)
	defer closeAll()
	tp.Deployed = deployed
	if !deployed && len(l.Nodes) > 0 {
		if there, _ := ns.Exists(m.netnsDir(), l.Namespace(l.Nodes[0].Name)); there && os.Geteuid() != 0 {
			tp.NotAsked = "the lab's namespaces exist, but entering them to ask the kernel needs root"
		}
	}
	if !deployed {
		for i, h := range p.Hops {
			if h.Next.Node != "" {
				if iface := l.Node(h.Next.Node).Interface(h.Next.Interface); iface != nil {
					tp.MACs[i] = iface.MAC
				}
			}
		}
		tp.Source = l.SourceOf(tp.From, to)
		return tp, nil
	}
	var problems []string
	for i, h := range p.Hops {
		if h.Next.Node == "" {
			continue
		}
		if link, err := handles[h.Next.Node].LinkByName(h.Next.Interface); err != nil {
			problems = append(problems, fmt.Sprintf("next hop %s: %v", h.Next, err))
		} else {
			tp.MACs[i] = link.Attrs().HardwareAddr
		}
	}
	if p.Local {
		return tp, nil
	}
	// The sender: a locally generated packet.
	rs, err := handles[from.Node].RouteGet(net.IP(to.AsSlice()))
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s: the kernel has no route to %s (%v)", from.Node, to, err))
	} else {
		tp.Source, _ = netip.AddrFromSlice(rs[0].Src)
		tp.Source = tp.Source.Unmap()
		problems = append(problems, compareHop(handles[from.Node], p.Hops[0], rs[0])...)
	}
	for _, h := range p.Hops[1:] {
		if h.L2 || h.Out == "" || !tp.Source.IsValid() {
			continue
		}
		rs, err := handles[h.Node].RouteGetWithOptions(net.IP(to.AsSlice()), &netlink.RouteGetOptions{
			Iif: h.In, SrcAddr: net.IP(tp.Source.AsSlice()),
		})
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: the kernel does not forward a packet from %s to %s arriving on %s (%v)", h.Node, tp.Source, to, h.In, explainRouteErr(err)))
			continue
		}
		problems = append(problems, compareHop(handles[h.Node], h, rs[0])...)
	}
	if len(problems) > 0 {
		return tp, &KernelDisagrees{Path: tp, Problems: problems}
	}
	return tp, nil
}

// compareHop checks the kernel's route for a hop against the file's:
// the same egress and the same next-hop address.
func compareHop(h *netlink.Handle, hop spec.Hop, r netlink.Route) []string {
	var out []string
	egress := fmt.Sprint(r.LinkIndex)
	if l, err := h.LinkByIndex(r.LinkIndex); err == nil {
		egress = l.Attrs().Name
	}
	if egress != hop.Out {
		out = append(out, fmt.Sprintf("%s: the kernel sends out of %s, the file says %s", hop.Node, egress, hop.Out))
	}
	via := hop.Via
	if !hop.Gateway {
		via = netip.Addr{}
	}
	kgw, _ := netip.AddrFromSlice(r.Gw)
	if kgw.Unmap() != via {
		out = append(out, fmt.Sprintf("%s: the kernel's gateway is %s, the file says %s", hop.Node, orOnLink(kgw.Unmap()), orOnLink(via)))
	}
	return out
}

func orOnLink(a netip.Addr) string {
	if !a.IsValid() {
		return "none (on-link)"
	}
	return a.String()
}

func explainRouteErr(err error) string {
	switch {
	case errors.Is(err, unix.EHOSTUNREACH), errors.Is(err, unix.ENETUNREACH):
		return fmt.Sprintf("%v: no route, or forwarding is off", err)
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.EINVAL):
		return fmt.Sprintf("%v: reverse-path filter or martian source", err)
	}
	return err.Error()
}

// labHandles opens a netlink handle in every namespace of the lab if all
// of them exist and carry the lab's marker; deployed is false otherwise.
func (m *Manager) labHandles(l *spec.Lab) (map[string]*netlink.Handle, func(), bool) {
	handles := map[string]*netlink.Handle{}
	closeAll := func() {
		for _, h := range handles {
			h.Close()
		}
	}
	for _, n := range l.Nodes {
		nsh, err := ns.Open(m.netnsDir(), l.Namespace(n.Name))
		if err != nil {
			closeAll()
			return nil, func() {}, false
		}
		h, err := nsh.NetlinkHandle()
		nsh.Close()
		if err != nil {
			closeAll()
			return nil, func() {}, false
		}
		handles[n.Name] = h
		lo, err := h.LinkByIndex(loIndex)
		if err != nil || lo.Attrs().Alias != nsMarker(l.Name, n.Name) {
			closeAll()
			return nil, func() {}, false
		}
	}
	return handles, closeAll, true
}

// Deployed reports whether every namespace of the lab exists and carries
// the lab's marker. It runs in the caller's namespace.
func (m *Manager) Deployed(l *spec.Lab) bool {
	_, closeAll, ok := m.labHandles(l)
	closeAll()
	return ok
}
