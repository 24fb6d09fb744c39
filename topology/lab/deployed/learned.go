package deployed

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The deployed lab as its kernels have it: addresses and routes set by
// nslab, exec lines, daemons or a user by hand are all the kernel's, and
// the packet walk (so nslab path, check and bench) goes by them. Learn
// reads them into the lab's model (spec.Interface.Live, spec.Node.Learned)
// and lists where they differ from the file (Opened.Differences).

// learnedProtocol reports whether a route of this protocol was installed
// by a daemon (not the kernel's connected routes, nor static ones, which
// nslab and iproute2 install as RTPROT_BOOT).
func learnedProtocol(p netlink.RouteProtocol) bool {
	switch p {
	case unix.RTPROT_UNSPEC, unix.RTPROT_REDIRECT, unix.RTPROT_KERNEL, unix.RTPROT_BOOT, unix.RTPROT_STATIC:
		return false
	}
	return true
}

// Learn reads every local node's addresses, link states and routes (all
// tables but local, any protocol but the kernel's connected routes) into
// the lab's model, replacing what an earlier Learn read, and lists their
// differences from the file in r.Differences. It runs in the caller's
// namespace (through each node's handle).
func (r *Opened) Learn() error {
	r.Differences = nil
	defer r.Lab.ForgetLearned() // what the daemons can learn follows the addresses read
	stopped := map[string]bool{}
	if st, err := r.m.Recorded(r.Lab.Name); err == nil {
		for _, s := range st.Stopped {
			stopped[s.Node] = true
		}
	}
	var running map[string][]string // the routing daemons running, read once
	if slices.ContainsFunc(r.Lab.Nodes, (*spec.Node).RunsRouting) {
		running = runningDaemons(r.Lab.Name)
	}
	for _, n := range r.Lab.Model().Nodes {
		node := r.nodes[n.Name]
		if node == nil {
			continue
		}
		n.Stopped = stopped[n.Name]
		r.Differences = append(r.Differences, daemonDifferences(r.Lab.Name, n, running)...)
		names, err := learnLinks(node.Handle, n)
		if err != nil {
			return fmt.Errorf("read the addresses of %s: %w", n.Name, err)
		}
		routes, err := liveRoutes(node.Handle, names)
		if err != nil {
			return fmt.Errorf("read the routes of %s: %w", n.Name, err)
		}
		n.Learned, n.KernelRead = nil, true
		for _, kr := range routes {
			n.Learned = append(n.Learned, kr.Route)
		}
		r.Differences = append(r.Differences, differences(n, routes)...)
		qs, err := impairDifferences(node.Handle, n)
		if err != nil {
			return fmt.Errorf("read the qdiscs of %s: %w", n.Name, err)
		}
		rs, err := ruleDifferences(node.Handle, n)
		if err != nil {
			return fmt.Errorf("read the rules of %s: %w", n.Name, err)
		}
		fw, err := netfilterDifferences(node, r.Lab.Name, n)
		if err != nil {
			return fmt.Errorf("read the NAT and firewall rules of %s: %w", n.Name, err)
		}
		r.Differences = append(append(append(r.Differences, qs...), rs...), fw...)
	}
	return nil
}

// learnLinks reads the kernel's addresses and states of n's interfaces
// and bridges through h, a handle in n's namespace: one dump of its links
// and one of its addresses. It returns the links' names by index, for its
// routes.
func learnLinks(h *netlink.Handle, n *spec.Node) (map[int]string, error) {
	links, err := nlsafe.LinkList(h)
	if err != nil {
		return nil, err
	}
	addrs, err := nlsafe.AddrList(h, nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	names, byName := map[int]string{}, map[string]*netlink.LinkAttrs{}
	for _, l := range links {
		names[l.Attrs().Index], byName[l.Attrs().Name] = l.Attrs().Name, l.Attrs()
	}
	live := map[int][]netip.Prefix{}
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP)
		if ip.Unmap().IsLoopback() {
			continue // every node's 127.0.0.1 and ::1: no address of the lab
		}
		ones, _ := a.Mask.Size()
		live[a.LinkIndex] = append(live[a.LinkIndex], netip.PrefixFrom(ip.Unmap(), ones))
	}
	read := func(name string) ([]netip.Prefix, *netlink.LinkAttrs, error) {
		attrs, ok := byName[name]
		if !ok {
			return nil, nil, fmt.Errorf("no link %s in the kernel", name)
		}
		return append([]netip.Prefix{}, live[attrs.Index]...), attrs, nil
	}
	if n.Interface("lo") == nil {
		// Daemons and exec lines address lo (router IDs) where the file
		// does not: the kernel's lo stands in the model too.
		n.Interfaces = append(n.Interfaces, &spec.Interface{Name: "lo", Kind: spec.KindLoopback})
	}
	for _, i := range n.Interfaces {
		addrs, attrs, err := read(i.Name)
		if err != nil {
			return nil, err
		}
		i.Live = addrs
		i.Down = attrs.Flags&net.FlagUp == 0
		// Without carrier: a veth end whose peer is down, however the
		// kernel words it (down here, lowerlayerdown on Debian's); a
		// device that knows no carrier (unknown) carries.
		i.NoCarrier = !i.Down && (attrs.OperState == netlink.OperDown ||
			(attrs.OperState == netlink.OperLowerLayerDown && i.Kind == spec.KindVeth))
	}
	for _, b := range n.Bridges {
		if b.Live, _, err = read(b.Name); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// liveRoute is a route of a node's kernel in the file's terms, with the
// protocol that installed it.
type liveRoute struct {
	*spec.Route
	Protocol netlink.RouteProtocol
}

// kernelRoutes lists the unicast routes of every table but local that
// the kernel did not make from an address, each path of a multipath
// route as a route of its own (the walk follows the first; the kernel
// hashes flows over them).
func liveRoutes(h *netlink.Handle, names map[int]string) ([]liveRoute, error) {
	var out []liveRoute
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := nlsafe.RouteListFiltered(h, family, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return nil, err
		}
		for _, rt := range rs {
			if rt.Protocol == unix.RTPROT_KERNEL || rt.Type != unix.RTN_UNICAST || rt.Table == unix.RT_TABLE_LOCAL {
				continue
			}
			for _, sr := range toSpecRoutes(names, rt) {
				if rt.Table != unix.RT_TABLE_MAIN {
					sr.Table = rt.Table
				}
				out = append(out, liveRoute{sr, rt.Protocol})
			}
		}
	}
	return out, nil
}

// differences lists where node n's kernel, as Learn read it, differs from
// the file: addresses (link-local ones aside, which the kernel makes) and
// routes, but the routes n's own daemons installed, which the file cannot
// list.
func differences(n *spec.Node, routes []liveRoute) []Difference {
	var out []Difference
	say := func(format string, args ...any) {
		out = append(out, Difference{Node: n.Name, What: fmt.Sprintf(format, args...)})
	}
	lacks := func(format string, args ...any) {
		out = append(out, Difference{Node: n.Name, What: fmt.Sprintf(format, args...), Missing: true})
	}
	for _, i := range n.Interfaces {
		if i.Down || i.NoCarrier {
			addrDifferences(say, say, i.Name, i.Addresses, i.Live) // IPv6 addresses go with the link
		} else {
			addrDifferences(say, lacks, i.Name, i.Addresses, i.Live)
		}
		if i.Down {
			say("%s is down in the kernel", i.Name)
		} else if i.NoCarrier {
			say("%s has no carrier (its link is down): the kernel still routes out of it, and the device drops what it is given", i.Name)
		}
	}
	for _, b := range n.Bridges {
		addrDifferences(say, lacks, b.Name, b.Addresses, b.Live)
	}
	for _, kr := range routes {
		if (n.RunsRouting() && learnedProtocol(kr.Protocol)) || slices.ContainsFunc(n.Routes, kr.sameAs) {
			continue
		}
		say("route %s (protocol %s) is in the kernel, not in the file", routeText(kr.Route), kr.Protocol)
	}
	for _, fr := range n.Routes {
		if slices.ContainsFunc(routes, func(kr liveRoute) bool { return kr.sameAs(fr) }) {
			continue
		}
		if i := downDevice(n, fr); i != nil {
			// The kernel takes the routes out of a link that goes down
			// (nslab link down, a node stopped): a consequence of the
			// link's state, said above, not a route lost.
			say("the file's route %s is not in the kernel while %s is down", routeText(fr), i.Name)
			continue
		}
		lacks("the file's route %s is not in the kernel", routeText(fr))
	}
	return out
}

// downDevice is the interface of n a file's route goes out of (its dev:,
// or the one whose address covers its gateway) when that interface is
// down or without carrier; nil otherwise.
func downDevice(n *spec.Node, fr *spec.Route) *spec.Interface {
	for _, i := range n.Interfaces {
		if !i.Down && !i.NoCarrier {
			continue
		}
		if fr.Dev == i.Name {
			return i
		}
		for _, a := range i.Addresses {
			if fr.Dev == "" && fr.Via.IsValid() && a.Contains(fr.Via) {
				return i
			}
		}
	}
	return nil
}

// Difference is one way a node's kernel differs from the file.
// Missing: the kernel lacks what the file declares (an address, a route,
// an impairment); the lab is then not as its file says, and check fails.
// The others (what daemons, exec lines or a user added, a link taken
// down) are information.
type Difference struct {
	Node    string `json:"node"`
	What    string `json:"what"`
	Missing bool   `json:"missing,omitempty"`
}

// Missing lists the differences where the kernels lack what the file
// declares.
func Missing(ds []Difference) []Difference {
	var out []Difference
	for _, d := range ds {
		if d.Missing {
			out = append(out, d)
		}
	}
	return out
}

func (d Difference) String() string { return d.Node + ": " + d.What }

func addrDifferences(say, lacks func(string, ...any), dev string, file, live []netip.Prefix) {
	for _, a := range live {
		if !slices.Contains(file, a) && !a.Addr().IsLinkLocalUnicast() && !a.Addr().IsLoopback() {
			say("%s has %s in the kernel, not in the file", dev, a)
		}
	}
	for _, a := range file {
		if !slices.Contains(live, a) {
			lacks("%s: the file's %s is not in the kernel", dev, a)
		}
	}
}

// sameAs reports whether the kernel's route is the file's fr: the same
// destination, table and gateway, and the same device where fr names one.
func (kr liveRoute) sameAs(fr *spec.Route) bool {
	return kr.To == fr.To.Masked() && kr.Via == fr.Via && cmp.Or(kr.Table, spec.TableMain) == cmp.Or(fr.Table, spec.TableMain) &&
		(fr.Dev == "" || fr.Dev == kr.Dev)
}

func routeText(r *spec.Route) string {
	s := r.To.String()
	if r.Via.IsValid() {
		s += " via " + r.Via.String()
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	if r.Table != 0 && r.Table != spec.TableMain {
		s += fmt.Sprintf(" table %d", r.Table)
	}
	return s
}

// toSpecRoutes is a kernel route in the file's terms, its devices named
// by names (index to name).
func toSpecRoutes(names map[int]string, rt netlink.Route) []*spec.Route {
	to := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	if rt.Family == netlink.FAMILY_V6 {
		to = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	if rt.Dst != nil {
		ones, _ := rt.Dst.Mask.Size()
		a, _ := netip.AddrFromSlice(rt.Dst.IP)
		to = netip.PrefixFrom(a.Unmap(), ones)
	}
	hops := []*netlink.NexthopInfo{{LinkIndex: rt.LinkIndex, Gw: rt.Gw, Via: rt.Via}}
	if len(rt.MultiPath) > 0 {
		hops = rt.MultiPath
	}
	var out []*spec.Route
	for _, hop := range hops {
		sr := &spec.Route{To: to, Metric: rt.Priority}
		sr.Via = inspect.Gateway(hop.Gw, hop.Via)
		sr.Dev = names[hop.LinkIndex]
		out = append(out, sr)
	}
	return out
}

// Tables is every local node's main routing table as text, one line per
// route, nodes in file order: two calls that return the same text saw the
// same routes.
func (r *Opened) Tables() (string, error) {
	var b strings.Builder
	for _, n := range r.Lab.Nodes {
		node := r.nodes[n.Name]
		if node == nil {
			continue
		}
		var lines []string
		for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			rs, err := nlsafe.RouteListFiltered(node.Handle, family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
			if err != nil {
				return "", fmt.Errorf("read the routes of %s: %w", n.Name, err)
			}
			for _, rt := range rs {
				lines = append(lines, rt.String())
			}
		}
		slices.Sort(lines)
		fmt.Fprintf(&b, "%s\n%s\n", n.Name, strings.Join(lines, "\n"))
	}
	return b.String(), nil
}
