package deployed

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TracedPath is the path from a node to an address, as the lab's file
// says (spec.Lab.Trace), with each hop's next-hop MAC and, when the lab is
// running, confirmed by the kernel's own route lookup in every namespace on
// the way. nslab path prints it; nslab bench takes its destination MAC and
// measured interfaces from it, so both agree.
type TracedPath struct {
	*walk.Path
	From spec.Endpoint `json:"from"`
	To   netip.Addr    `json:"to"`
	// Source is the sender's source address: the kernel's choice when
	// running, else the first address of the egress of the right family.
	Source netip.Addr `json:"source,omitzero"`
	// Deployed: the kernel was asked, and agreed at every routing hop
	// (otherwise Trace returns a *KernelDisagrees error).
	Deployed bool `json:"deployed"`
	// NotAsked says why the kernel was not asked although the lab's
	// namespaces exist (they cannot be entered without root).
	NotAsked string `json:"not_asked,omitempty"`
	// Elsewhere names the hops on other hosts of a lab that spans hosts:
	// traced by the file, their kernels not asked from here.
	Elsewhere string `json:"elsewhere,omitempty"`
	// Differences are where the kernels of the nodes on the path differ
	// from the file (a deployed lab is traced by its kernels' addresses
	// and routes: see Opened.Learn).
	Differences []Difference `json:"differences,omitempty"`
	// Disagreements are the hops where the kernel's own route lookup
	// disagrees with the path (Trace then returns a *KernelDisagrees).
	Disagreements []string `json:"disagreements,omitempty"`
}

// SenderMAC is the destination MAC of the sender's frames: the MAC of the
// first hop's next hop (nil when the file cannot know it).
func (tp *TracedPath) SenderMAC() net.HardwareAddr { return tp.Hops[0].NextMAC }

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

// Trace computes the path of flow f's packets from from (a node, or
// node:interface) to to from the lab's file and, when the lab is deployed and can be entered,
// the routes its daemons learned (see Opened.Learn), and asks the kernel (see Opened.Trace). It runs in the caller's namespace.
func (m *Store) Trace(l *spec.Lab, from spec.Endpoint, to netip.Addr, f spec.Flow) (*TracedPath, error) {
	r, err := m.Open(l)
	if err == nil {
		defer r.Close()
		if err := r.Learn(); err != nil {
			return nil, err
		}
		return r.TraceFlow(from, to, f)
	}
	tp, terr := TraceFileFlow(l, from, to, f)
	if terr != nil {
		return nil, terr
	}
	switch {
	case errors.Is(err, ErrNotPresent) && m.Rootless:
		tp.NotAsked = "the lab is not among this user's rootless labs; one deployed by root is root's to ask"
	case !errors.Is(err, ErrNotPresent) && os.Geteuid() != 0:
		tp.NotAsked = "the lab's namespaces exist, but entering them to ask the kernel needs root"
	}
	return tp, nil
}

// TraceFile is the path of an ICMP echo by the file alone: MACs as the
// file gives them.
func TraceFile(l *spec.Lab, from spec.Endpoint, to netip.Addr) (*TracedPath, error) {
	return TraceFileFlow(l, from, to, spec.Flow{})
}

// TraceFileFlow is TraceFile for the packets of flow f.
func TraceFileFlow(l *spec.Lab, from spec.Endpoint, to netip.Addr, f spec.Flow) (*TracedPath, error) {
	p, err := walk.TraceFlow(l.Model(), from, to, f)
	if err != nil {
		return nil, err
	}
	tp := &TracedPath{Path: p, From: spec.Endpoint{Node: from.Node, Interface: p.Hops[0].Out}, To: to}
	if p.Local {
		tp.From.Interface = p.Dest.Interface
	}
	tp.Source = walk.SourceOf(l.Model(), tp.From, to)
	tp.Elsewhere = elsewhere(l, p)
	return tp, nil
}

// elsewhere names the hops of p on other hosts than l's part, by host.
func elsewhere(l *spec.Lab, p *walk.Path) string {
	if l.Part == nil {
		return ""
	}
	var out []string
	for _, h := range p.Hops {
		if e := l.Elsewhere(h.Node); e != "" {
			out = append(out, e)
		}
	}
	return strings.Join(out, ", ")
}

// Trace computes the path by the file and checks every routing hop with
// the kernel's route lookup in that hop's namespace: the sender's as a
// locally sent packet, every router's as a packet arriving on its ingress
// from the sender's source address (so forwarding and reverse-path
// filtering count). MACs are read from the kernel. It enters no namespace:
// it asks through the nodes' handles.
func (r *Opened) Trace(from spec.Endpoint, to netip.Addr) (*TracedPath, error) {
	return r.TraceFlow(from, to, spec.Flow{})
}

// TraceFlow is Trace for the packets of flow f (a traffic run's).
func (r *Opened) TraceFlow(from spec.Endpoint, to netip.Addr, f spec.Flow) (*TracedPath, error) {
	tp, err := TraceFileFlow(r.Lab, from, to, f)
	if err != nil {
		if len(r.Differences) > 0 {
			return nil, &NoKernelPath{Err: err, Differences: r.Differences}
		}
		return nil, err
	}
	for _, d := range r.Differences {
		if slices.ContainsFunc(tp.Hops, func(h walk.Hop) bool { return h.Node == d.Node }) {
			tp.Differences = append(tp.Differences, d)
		}
	}
	if !r.Lab.Local(from.Node) {
		tp.NotAsked = fmt.Sprintf("%s is on host %s: run nslab path there to ask its kernel", from.Node, r.Lab.Model().Node(from.Node).Host)
		return tp, nil
	}
	tp.Deployed = true
	problems := r.readMACs(tp)
	if tp.Local {
		return tp, nil
	}
	problems = append(problems, r.askKernel(tp)...)
	if len(problems) > 0 {
		tp.Disagreements = problems
		return tp, &KernelDisagrees{Path: tp, Problems: problems}
	}
	return tp, nil
}

// NoKernelPath is a deployed lab whose kernels take the packet nowhere,
// with where they differ from the file (the likely why).
type NoKernelPath struct {
	Err         error
	Differences []Difference
}

func (e *NoKernelPath) Error() string {
	d := make([]string, len(e.Differences))
	for i, x := range e.Differences {
		d[i] = x.String()
	}
	return fmt.Sprintf("%v; where the kernels differ from the file: %s", e.Err, strings.Join(d, "; "))
}

func (e *NoKernelPath) Unwrap() error { return e.Err }

// readMACs replaces the file's next-hop MACs by the kernel's.
func (r *Opened) readMACs(tp *TracedPath) []string {
	var problems []string
	for i, h := range tp.Hops {
		if h.Next.Node == "" || !r.Lab.Local(h.Next.Node) {
			continue // on another host: the file's MAC, which that host set
		}
		if link, err := r.Link(h.Next); err != nil {
			problems = append(problems, fmt.Sprintf("next hop %s: %v", h.Next, err))
		} else {
			tp.Hops[i].NextMAC = link.Attrs().HardwareAddr
		}
	}
	return problems
}

// askKernel compares the kernel's route lookups with the file's hops.
func (r *Opened) askKernel(tp *TracedPath) []string {
	var problems []string
	sender := r.nodes[tp.From.Node].Handle
	rs, err := sender.RouteGet(net.IP(tp.To.AsSlice()))
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s: the kernel has no route to %s (%v)", tp.From.Node, tp.To, err))
	} else {
		tp.Source, _ = netip.AddrFromSlice(rs[0].Src)
		tp.Source = tp.Source.Unmap()
		problems = append(problems, compareHop(sender, tp.Hops[0], rs[0])...)
	}
	src, dst := tp.Source, tp.To // as the packet is on each wire, NAT applied
	if tp.Hops[0].SNAT.IsValid() {
		src = tp.Hops[0].SNAT
	}
	for _, h := range tp.Hops[1:] {
		if h.DNAT.IsValid() {
			dst = h.DNAT.Addr()
		}
		if h.L2 || h.Out == "" || !src.IsValid() || !r.Lab.Local(h.Node) {
			continue
		}
		hh := r.nodes[h.Node].Handle
		rs, err := hh.RouteGetWithOptions(net.IP(dst.AsSlice()), &netlink.RouteGetOptions{
			Iif: h.In, SrcAddr: net.IP(src.AsSlice()),
		})
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: the kernel does not forward a packet from %s to %s arriving on %s (%v)", h.Node, src, dst, h.In, explainRouteErr(err)))
			continue
		}
		problems = append(problems, compareHop(hh, h, rs[0])...)
		if h.SNAT.IsValid() {
			src = h.SNAT
		}
	}
	return problems
}

// compareHop checks the kernel's route for a hop against the file's:
// the same egress and the same next-hop address.
func compareHop(h *netlink.Handle, hop walk.Hop, r netlink.Route) []string {
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
	if kgw := inspect.Gateway(r.Gw, r.Via); kgw != via {
		out = append(out, fmt.Sprintf("%s: the kernel's gateway is %s, the file says %s", hop.Node, orOnLink(kgw), orOnLink(via)))
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

// Deployed reports whether every namespace of the lab exists and carries
// the lab's marker. It runs in the caller's namespace.
func (m *Store) Deployed(l *spec.Lab) bool {
	r, err := m.Open(l)
	if err != nil {
		return false
	}
	r.Close()
	return true
}
