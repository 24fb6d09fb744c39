package spec

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// A lab can span several machines (hosts). Each node names its host; a
// link whose ends are on different hosts becomes a VXLAN interface at each
// end, carried over the hosts' underlay. Every host deploys its own part
// (Lab.PartOf) from the same file.

// Host is one machine of a lab that spans several.
type Host struct {
	Name     string
	Underlay netip.Addr // this host's address on the network between hosts
	MTU      int        // the underlay's MTU; DefaultUnderlayMTU when not given
	SSH      string     // how a coordinator reaches the host: [user@]host as ssh takes it; "" when not given
	// NodeSelector places the host on a Kubernetes node with these
	// labels (nslab deploy --kubernetes); nil: the node of its name. A
	// host with one may leave Underlay unset (invalid) until placed.
	NodeSelector map[string]string
}

const (
	// MaxVNI is the largest VXLAN network identifier (24 bits).
	MaxVNI = 1<<24 - 1
	// DefaultVXLANPort is the IANA port of VXLAN.
	DefaultVXLANPort = 4789
	// DefaultUnderlayMTU is an underlay's MTU when hosts: does not say.
	DefaultUnderlayMTU = 1500
)

// VXLANOverhead is what VXLAN adds to a frame on an underlay of this
// address family: outer IP, UDP (8), VXLAN (8) and inner Ethernet (14).
func VXLANOverhead(underlay netip.Addr) int {
	if underlay.Is6() {
		return 40 + 30
	}
	return 20 + 30
}

// Tunnel is one end of a link between hosts, as the part of the lab on
// the host of Local sees it: a VXLAN interface in Local's node.
// Part is what makes a Lab one host's part of a lab that spans hosts:
// the host, the links from its nodes to nodes on other hosts (each a
// VXLAN interface at either end), and the whole lab, for paths across
// hosts.
type Part struct {
	Host    string
	Tunnels []*Tunnel
	Whole   *Lab
}

// OnHost is the host the lab is the part of, "" for a whole lab.
func (l *Lab) OnHost() string {
	if l.Part == nil {
		return ""
	}
	return l.Part.Host
}

// Tunnels are the part's links to other hosts; none for a whole lab.
func (l *Lab) Tunnels() []*Tunnel {
	if l.Part == nil {
		return nil
	}
	return l.Part.Tunnels
}

type Tunnel struct {
	Local, Remote     Endpoint
	RemoteHost        string
	VNI, Port         int
	LocalIP, RemoteIP netip.Addr
	Link              *Link
}

func (t *Tunnel) String() string {
	return fmt.Sprintf("%s <-> %s on host %s (VXLAN %d, %s -> %s port %d)", t.Local, t.Remote, t.RemoteHost, t.VNI, t.LocalIP, t.RemoteIP, t.Port)
}

// Host returns the host called name, nil if there is none.
func (l *Lab) Host(name string) *Host {
	for _, h := range l.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// HostNames lists the hosts in file order.
func (l *Lab) HostNames() []string {
	out := make([]string, len(l.Hosts))
	for i, h := range l.Hosts {
		out[i] = h.Name
	}
	return out
}

// CrossesHosts reports whether link k joins nodes on two hosts.
func (l *Lab) CrossesHosts(k *Link) bool {
	return l.Node(k.A.Node).Host != l.Node(k.B.Node).Host
}

var hostKeys = keysOf(hostDef)

// parseHosts reads hosts: {name: {underlay: ADDR, mtu: N}}.
func (r *reporter) parseHosts(e kv) []*Host {
	var out []*Host
	for _, he := range r.entries(e.v, e.path, "host name: {underlay: 192.0.2.1}") {
		path := e.path + "." + he.key
		r.at(path, he.k.Line, he.k.Column)
		h := &Host{Name: he.key, MTU: DefaultUnderlayMTU}
		f := r.fields(he.v, path, "a host", hostKeys...)
		if u, ok := f["underlay"]; ok {
			if s, ok := r.str(u.v, u.path, "the host's underlay address, such as 192.0.2.1"); ok {
				a, err := netip.ParseAddr(s)
				switch {
				case err != nil:
					r.errf(u.path, "invalid underlay address %q: want the host's address such as 192.0.2.1 (no prefix length)", s)
				case !a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback():
					r.errf(u.path, "underlay %s is not a unicast address: give the host's own address on the network between the hosts", a)
				default:
					h.Underlay = a
				}
			}
		}
		ns, placed := f["node_selector"]
		if placed {
			h.NodeSelector = r.nodeSelector(ns)
		}
		if _, ok := f["underlay"]; !ok && !placed {
			r.errf(path, "missing underlay: the host's address on the network between the hosts, such as 192.0.2.1 (or node_selector:, to place the host on a Kubernetes node whose address a deploy on Kubernetes fills in)")
		}
		if m, ok := f["mtu"]; ok {
			h.MTU, _ = r.integer(m.v, m.path, "the underlay MTU", 1280, 65535)
		}
		if s, ok := f["ssh"]; ok {
			h.SSH, _ = r.str(s.v, s.path, "how to reach the host over SSH, such as root@192.0.2.1")
			if strings.HasPrefix(h.SSH, "-") || strings.ContainsAny(h.SSH, " \t\n'\"") {
				r.errf(s.path, "ssh %q is not a destination: give [user@]host as ssh takes it, such as root@192.0.2.1 (options go in ~/.ssh/config)", h.SSH)
			}
		}
		out = append(out, h)
	}
	return out
}

// nodeSelector reads node_selector: {LABEL: VALUE}, Kubernetes label
// syntax checked by the API server when the coordinator lists the nodes.
func (r *reporter) nodeSelector(e kv) map[string]string {
	sel := map[string]string{}
	for _, le := range r.entries(e.v, e.path, "label: value, such as nslab.dev/role: router") {
		if v, ok := r.str(le.v, e.path+"."+le.key, "the label's value"); ok {
			sel[le.key] = v
		}
	}
	if len(sel) == 0 {
		r.errf(e.path, "node_selector: is empty: give the labels of the node to place the host on (nslab.dev/role: router), or remove it")
		return nil
	}
	return sel
}

// validateHosts checks hosts, each node's host and the links between
// hosts: their VNIs and ports (derived when not given) and their MTUs,
// which must leave room for VXLAN's overhead on the underlay (an interface
// without mtu: gets the largest that fits).
func validateHosts(r *reporter, lab *Lab, ex *extra) {
	if len(lab.Hosts) == 0 {
		for _, n := range lab.Nodes {
			if n.Host != "" {
				r.errf("nodes."+n.Name+".host", "host %q, but the lab has no hosts: section: add hosts: {%s: {underlay: ADDRESS}}, or remove host:", n.Host, n.Host)
			}
		}
		for _, rl := range ex.links {
			if rl.vni != 0 || rl.port != 0 {
				r.errf(rl.path, "vni: and port: are for links between hosts (VXLAN), and this lab has no hosts: remove them")
			}
		}
		return
	}
	seen := map[netip.Addr]string{}
	for _, h := range lab.Hosts {
		if other, dup := seen[h.Underlay]; dup && h.Underlay.IsValid() {
			r.errf("hosts."+h.Name+".underlay", "underlay %s is host %s's already: each host has its own address", h.Underlay, other)
		}
		seen[h.Underlay] = h.Name
		if h.Underlay.IsValid() && lab.Hosts[0].Underlay.IsValid() && h.Underlay.Is4() != lab.Hosts[0].Underlay.Is4() {
			r.errf("hosts."+h.Name+".underlay", "underlay %s is not of the same family as host %s's (%s): VXLAN joins hosts over one family", h.Underlay, lab.Hosts[0].Name, lab.Hosts[0].Underlay)
		}
	}
	for _, n := range lab.Nodes {
		path := "nodes." + n.Name
		switch {
		case n.Host == "":
			r.errf(path, "missing host: the lab spans hosts %s: say which one node %s runs on", strings.Join(lab.HostNames(), ", "), n.Name)
		case lab.Host(n.Host) == nil:
			hint := ""
			if s := nearest(n.Host, lab.HostNames()); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			r.errf(path+".host", "host %q is not under hosts:%s: use one of %s", n.Host, hint, strings.Join(lab.HostNames(), ", "))
		}
	}
	if len(r.probs) > 0 {
		return
	}
	validateTunnels(r, lab, ex)
}

// validateTunnels gives each link between hosts its VNI and port and
// checks the MTUs of its two ends.
func validateTunnels(r *reporter, lab *Lab, ex *extra) {
	source := map[Endpoint]rawLink{} // by first end: each end is on one link
	for _, rl := range ex.links {
		if len(rl.endpoints) == 2 {
			source[rl.endpoints[0].Endpoint] = rl
		}
	}
	vnis := map[int]string{}
	for _, k := range lab.Links {
		rl := source[k.A]
		if !lab.CrossesHosts(k) {
			if rl.vni != 0 || rl.port != 0 {
				r.errf(rl.path, "vni: and port: are for links between hosts, and %s and %s are both on host %s: remove them", k.A.Node, k.B.Node, lab.Node(k.A.Node).Host)
			}
			continue
		}
		if rl.vni != 0 {
			if other, dup := vnis[rl.vni]; dup {
				r.errf(rl.path+".vni", "VNI %d is %s's already: each link between hosts has its own", rl.vni, other)
			}
			vnis[rl.vni] = rl.path
		}
		k.VNI, k.Port = rl.vni, rl.port
		if k.Port == 0 {
			k.Port = DefaultVXLANPort
		}
		checkTunnelMTU(r, lab, k, rl.path)
	}
	for _, k := range lab.Links {
		if lab.CrossesHosts(k) && k.VNI == 0 {
			k.VNI = deriveVNI(lab.Name, k, vnis)
			vnis[k.VNI] = "derived"
		}
	}
}

// checkTunnelMTU sets or checks the MTU of both ends of link k between
// hosts: VXLAN's overhead must fit in the smaller underlay MTU.
func checkTunnelMTU(r *reporter, lab *Lab, k *Link, path string) {
	ha, hb := lab.Host(lab.Node(k.A.Node).Host), lab.Host(lab.Node(k.B.Node).Host)
	under := min(ha.MTU, hb.MTU)
	limit := under - VXLANOverhead(ha.Underlay)
	for _, e := range []Endpoint{k.A, k.B} {
		i := lab.Node(e.Node).Interface(e.Interface)
		switch {
		case i.MTU == 0:
			i.MTU = limit
		case i.MTU > limit:
			r.errf(path, "%s has mtu %d, but VXLAN adds %d bytes on an underlay of MTU %d: set mtu: %d or less on both ends (or raise the hosts' mtu: if the underlay carries more)",
				e, i.MTU, VXLANOverhead(ha.Underlay), under, limit)
		}
		if i.Queues != 0 {
			r.errf(path, "%s has queues: %d, but a link between hosts is a VXLAN interface, which has one queue: remove queues:", e, i.Queues)
		}
	}
}

// deriveVNI is a VNI for link k from the lab's name and the link's ends,
// the same on every host, different from those taken.
func deriveVNI(lab string, k *Link, taken map[int]string) int {
	sum := sha256.Sum256([]byte(lab + " " + k.A.String() + " " + k.B.String()))
	v := int(binary.BigEndian.Uint32(sum[:4])%MaxVNI) + 1
	for taken[v] != "" {
		v = v%MaxVNI + 1
	}
	return v
}

// PartOf is the part of the lab on host: its nodes, the links between them,
// and a Tunnel for each link to a node elsewhere, whose interface's peer
// stays the remote end. Traffic runs are those sent from its nodes; the
// whole lab stays in Whole, for tracing paths across hosts.
func (l *Lab) PartOf(host string) (*Lab, error) {
	h := l.Host(host)
	if h == nil {
		if len(l.Hosts) == 0 {
			return nil, fmt.Errorf("lab %s has no hosts: section: it is one part, for this machine, and has no part for a host of its own", l.Name)
		}
		return nil, fmt.Errorf("lab %s has no host %q: its hosts are %s", l.Name, host, strings.Join(l.HostNames(), ", "))
	}
	for _, h := range l.Hosts {
		if !h.Underlay.IsValid() {
			return nil, fmt.Errorf("host %s has no underlay: address: its node_selector: places it on a Kubernetes node, and a deploy on Kubernetes fills in that node's address; anywhere else, give hosts.%s.underlay", h.Name, h.Name)
		}
	}
	p := &Lab{File: l.File, Source: l.Source, SHA256: l.SHA256, Name: l.Name, Prefix: l.Prefix, prefixGiven: l.prefixGiven, Hosts: l.Hosts,
		Unplaced: l.Unplaced, Part: &Part{Host: host, Whole: l}}
	for _, n := range l.Nodes {
		if n.Host == host {
			p.Nodes = append(p.Nodes, n)
		}
	}
	for _, k := range l.Links {
		a, b := l.Node(k.A.Node), l.Node(k.B.Node)
		switch {
		case a.Host == host && b.Host == host:
			p.Links = append(p.Links, k)
		case a.Host == host || b.Host == host:
			local, remote := k.A, k.B
			if b.Host == host {
				local, remote = k.B, k.A
			}
			rh := l.Host(l.Node(remote.Node).Host)
			p.Part.Tunnels = append(p.Part.Tunnels, &Tunnel{Local: local, Remote: remote, RemoteHost: rh.Name, VNI: k.VNI, Port: k.Port,
				LocalIP: h.Underlay, RemoteIP: rh.Underlay, Link: k})
		}
	}
	for _, t := range l.Traffic {
		if p.Node(t.From.Node) != nil {
			p.Traffic = append(p.Traffic, t)
		}
	}
	for _, pf := range l.SRIOV {
		if slices.ContainsFunc(pf.VFs, func(vf *VF) bool { return p.Node(vf.Node) != nil }) {
			p.SRIOV = append(p.SRIOV, pf)
		}
	}
	return p, nil
}

// Model is the lab that paths are traced in: the whole lab for a part of
// one that spans hosts, else l itself.
func (l *Lab) Model() *Lab {
	if l.Part != nil {
		return l.Part.Whole
	}
	return l
}

// Spans reports whether the lab spans hosts (and so is deployed by parts).
func (l *Lab) Spans() bool { return len(l.Hosts) > 0 }

// Elsewhere names node name with its host ("router on host b") when it
// runs on another host than this part's, and is "" when it is local.
func (l *Lab) Elsewhere(name string) string {
	if l.Local(name) {
		return ""
	}
	return fmt.Sprintf("%s on host %s", name, l.Model().Node(name).Host)
}

// Local reports whether node name runs on this part's host (always, for a
// lab on one machine).
func (l *Lab) Local(name string) bool {
	if l.Part == nil {
		return l.Node(name) != nil
	}
	n := l.Part.Whole.Node(name)
	return n != nil && n.Host == l.Part.Host
}

// WithPrefix gives the lab another namespace prefix than its file's (nslab's
// --prefix), so that it deploys beside a lab whose nodes have the same
// names. It refuses a prefix the file could not have, and one that makes
// a namespace name too long, naming the node.
func (l *Lab) WithPrefix(prefix string) error {
	if !prefixRE().MatchString(prefix) || strings.HasPrefix(prefix, ".") || strings.HasPrefix(prefix, "-") {
		return fmt.Errorf("prefix %q: use letters, digits, _, . and - only, not starting with . or -", prefix)
	}
	for _, n := range l.Model().Nodes {
		if ns := prefix + n.Name; len(ns) > MaxNamespace {
			return fmt.Errorf("prefix %q: node %s's namespace %s would be %d characters long: at most %d", prefix, n.Name, ns, len(ns), MaxNamespace)
		}
	}
	l.Prefix, l.prefixGiven = prefix, true
	if l.Part != nil && l.Part.Whole != l {
		l.Part.Whole.Prefix, l.Part.Whole.prefixGiven = prefix, true
	}
	return nil
}

// PrefixGiven is the prefix WithPrefix gave the lab, for the state to
// record; "" when it has its file's.
func (l *Lab) PrefixGiven() string {
	if l.prefixGiven {
		return l.Prefix
	}
	return ""
}
