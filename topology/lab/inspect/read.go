package inspect

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/netfilter"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/xdpfwd"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Summary is one deployed lab, as `nslab inspect` lists them.
type Summary struct {
	Lab      string    `json:"lab"`
	File     string    `json:"file,omitempty"`
	SHA256   string    `json:"sha256,omitempty"`
	Owner    string    `json:"owner,omitempty"`
	Phase    string    `json:"phase"` // deployed, deploying, interrupted, orphaned (markers but no state)
	Nodes    int       `json:"nodes"`
	Deployed time.Time `json:"deployed,omitzero"`
}

// ServiceInfo is a service of the lab and whether it still runs (the
// same process that was started: pid and start time).
type ServiceInfo struct {
	state.ServiceRecord
	Running bool `json:"running"`
}

// LabInfo is a deployed lab as the kernel sees it now.
type LabInfo struct {
	Services []ServiceInfo `json:"services,omitempty"`
	Lab      string        `json:"lab"`
	File     string        `json:"file"`
	SHA256   string        `json:"sha256,omitempty"` // of the file as deployed: the lab's identity with its name
	Owner    string        `json:"owner,omitempty"`  // who it was deployed for ("": a person)
	Phase    string        `json:"phase"`
	Deployed time.Time     `json:"deployed,omitzero"`
	Nodes    []NodeInfo    `json:"nodes"`
}

// NodeInfo is one node of a deployed lab.
type NodeInfo struct {
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Present   bool   `json:"present"`
	Error     string `json:"error,omitempty"`
	// ViewGone says why the node's view (its mount and UTS namespaces)
	// cannot be opened; empty when it is held.
	ViewGone   string          `json:"view_gone,omitempty"`
	Forwarding spec.Forwarding `json:"forwarding"`
	Interfaces []IfInfo        `json:"interfaces"`
	Routes     []RouteInfo     `json:"routes"` // of every table but local
	Rules      []PolicyRule    `json:"rules,omitempty"`
	// Placement is the CPU placement nslab recorded for the node (nil:
	// none); each interface's Queues say what the kernel has now.
	Placement *state.PlacementRecord `json:"placement,omitempty"`
	// Netfilter is the node's nslab table as the kernel has it now; nil
	// when the file gives the node no NAT or firewall rules.
	Netfilter *NetfilterInfo `json:"netfilter,omitempty"`
	// Routing is the node's routing daemons (frr:, bird:); nil: none.
	Routing *RoutingInfo `json:"routing,omitempty"`
	// Limits is the node's use against its limits (limits:); nil: none.
	Limits *LimitsInfo `json:"limits,omitempty"`
	// FastPath is the node's XDP forwarding program with its counters
	// since it was attached (nil: none on its interfaces).
	FastPath *FastPathInfo `json:"fastpath,omitempty"`
	// Stopped: nslab node stop stopped the node, at StoppedSince.
	Stopped      bool      `json:"stopped,omitempty"`
	StoppedSince time.Time `json:"stopped_since,omitzero"`
}

// FastPathInfo is a node's XDP fast path as the kernel has it now: the
// interfaces that carry it and its counters by reason (xdpfwd.Reasons).
type FastPathInfo struct {
	Kind       string            `json:"kind"` // xdp
	Interfaces []string          `json:"interfaces"`
	Counts     map[string]uint64 `json:"counts"`
	Entered    uint64            `json:"entered"`
	Forwarded  uint64            `json:"forwarded"`
	Passed     uint64            `json:"passed"`
	Dropped    uint64            `json:"dropped"`
}

// ReadFastPath reads the XDP forwarding program of a node from its
// interfaces as listed (nil when none has it).
func ReadFastPath(links []netlink.Link) (*FastPathInfo, error) {
	var fp *FastPathInfo
	for _, lk := range links {
		c, err := xdpfwd.ReadLink(lk)
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		if fp == nil { // one program, one set of counters, on every interface
			fp = &FastPathInfo{Kind: spec.FastPathXDP, Counts: map[string]uint64{}, Entered: c.Entered(), Forwarded: c.Forwarded(), Passed: c.Passed(), Dropped: c.Dropped()}
			for i, r := range xdpfwd.Reasons {
				fp.Counts[r] = c[i]
			}
		}
		fp.Interfaces = append(fp.Interfaces, lk.Attrs().Name)
	}
	return fp, nil
}

// NetfilterInfo is a node's nslab nftables table: its chains, and its
// rules with their counters and their words from the file. Missing says
// the file has rules for the node and the kernel has no table.
type NetfilterInfo struct {
	Table   string                `json:"table"`
	Missing bool                  `json:"missing,omitempty"`
	Chains  []netfilter.ChainInfo `json:"chains,omitempty"`
	Rules   []RuleInfo            `json:"rules,omitempty"`
	// Flowtables are the table's flowtables (a node's flowtable: true)
	// with the interfaces they cover.
	Flowtables []netfilter.FlowtableInfo `json:"flowtables,omitempty"`
}

// RuleInfo is one rule of a node's table: where it is in the file, what it
// says there, and its counter.
type RuleInfo struct {
	netfilter.Counted
	Path string `json:"path"`           // nodes.N.nat[i]; "" for a rule nslab did not write
	Rule string `json:"rule,omitempty"` // the file's rule in nslab's words
}

// IfInfo is one interface of a node.
type IfInfo struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Peer      string   `json:"peer,omitempty"`   // node:interface of a veth's other end
	Master    string   `json:"master,omitempty"` // bridge it is a port of
	MAC       string   `json:"mac"`
	MTU       int      `json:"mtu"`
	State     string   `json:"state"`
	Addresses []string `json:"addresses"`
	Queues    *Queues  `json:"queues,omitempty"` // nil for lo and bridges
	// Impairment is the interface's root qdisc as the kernel has it now
	// ("netem delay 20ms loss 1%"), set by the file or by nslab impair;
	// "" when it has none of its own.
	Impairment string `json:"impairment,omitempty"`
	// Qdiscs are the counters of its root qdisc and of the queue under
	// it, since they were made (nil without a qdisc of its own).
	Qdiscs []QdiscCounts `json:"qdiscs,omitempty"`
	// Offloads are its offloads as the kernel has them now (spec's
	// OffloadNames; nil for lo and where ethtool answers nothing), and
	// OffloadsSet those the file sets.
	Offloads    map[string]bool `json:"offloads,omitempty"`
	OffloadsSet []string        `json:"offloads_set,omitempty"`
	// NAPI are its NAPI sysfs files as the kernel has them now (NAPIFiles;
	// nil where the device has none), NAPISet whether the file gives any.
	NAPI    map[string]string `json:"napi,omitempty"`
	NAPISet bool              `json:"napi_set,omitempty"`
	// BusyPoll is the file's napi: busy_poll, which no kernel object
	// holds: the sockets nslab opens to receive here take it when opened.
	BusyPoll string `json:"busy_poll,omitempty"`
}

// NAPIFiles are the sysfs files of a device's NAPI settings.
var NAPIFiles = []string{"gro_flush_timeout", "napi_defer_hard_irqs", "threaded"}

// ReadNAPI reads the NAPI files of interface ifc (their values as the
// kernel gives them: gro_flush_timeout in ns), from a thread that sees its
// node's sysfs.
func ReadNAPI(ifc string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range NAPIFiles {
		b, err := os.ReadFile(filepath.Join("/sys/class/net", ifc, name))
		if err != nil {
			return nil, err
		}
		out[name] = strings.TrimSpace(string(b))
	}
	return out, nil
}

// QdiscCounts is one qdisc of an interface with its counters.
type QdiscCounts struct {
	Kind   string `json:"kind"`
	Parent string `json:"parent"` // "root", or "root's child"
	qdisc.Counters
}

// Queues is an interface's queues as the kernel has them now: their
// counts, the CPUs of each rx queue's RPS mask and each tx queue's XPS
// mask (CPU lists, "" for none), and threaded NAPI.
type Queues struct {
	Rx       int      `json:"rx"`
	Tx       int      `json:"tx"`
	RPS      []string `json:"rps_cpus"`
	XPS      []string `json:"xps_cpus"`
	Threaded bool     `json:"threaded_napi,omitempty"`
	GRO      bool     `json:"gro"`
	TSO      bool     `json:"tso"`
}

// RouteInfo is one route of a node's main table.
type RouteInfo struct {
	To     string `json:"to"`
	Via    string `json:"via,omitempty"`
	Dev    string `json:"dev,omitempty"`
	Metric int    `json:"metric,omitempty"`
	Proto  string `json:"proto"`
	Table  int    `json:"table"`
}

// ReadRouting reads a node's routes of every table but the kernel's local
// one (and but its routes for the node's own addresses), and its policy routing rules but the kernel's own three.
func ReadRouting(h *netlink.Handle, ni *NodeInfo, names map[int]string) error {
	routes, err := nlsafe.RouteListFiltered(h, netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("list routes in %s: %w", ni.Namespace, err)
	}
	for _, r := range routes {
		if r.Table != unix.RT_TABLE_LOCAL && !kernelRoute(r) {
			ni.Routes = append(ni.Routes, routeInfos(r, names)...)
		}
	}
	sort.SliceStable(ni.Routes, func(i, j int) bool {
		a, b := ni.Routes[i], ni.Routes[j]
		return a.Table < b.Table || (a.Table == b.Table && a.To < b.To)
	})
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} { // not the multicast routing families
		rules, err := nlsafe.RuleList(h, fam)
		if err != nil {
			return fmt.Errorf("list rules in %s: %w", ni.Namespace, err)
		}
		for _, r := range rules {
			if !KernelRule(r) {
				ni.Rules = append(ni.Rules, policyRule(r))
			}
		}
	}
	return nil
}

// kernelRoute reports whether r is a route the kernel keeps for an address
// of the node itself (local, broadcast, multicast, anycast), as it does in
// a VRF's table.
func kernelRoute(r netlink.Route) bool {
	switch r.Type {
	case unix.RTN_LOCAL, unix.RTN_BROADCAST, unix.RTN_MULTICAST, unix.RTN_ANYCAST:
		return true
	}
	return false
}

// PolicyRule is one policy routing rule of a node, as the kernel has it.
type PolicyRule struct {
	Priority int    `json:"priority"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	IIF      string `json:"iif,omitempty"`
	OIF      string `json:"oif,omitempty"`
	Table    int    `json:"table"`
}

func policyRule(r netlink.Rule) PolicyRule {
	p := PolicyRule{Priority: r.Priority, IIF: r.IifName, OIF: r.OifName, Table: r.Table}
	if r.Src != nil {
		p.From = r.Src.String()
	}
	if r.Dst != nil {
		p.To = r.Dst.String()
	}
	return p
}

// KernelRule reports whether r is one of the rules every namespace starts
// with (local at 0, main at 32766, default at 32767) or a VRF's l3mdev rule.
func KernelRule(r netlink.Rule) bool {
	plain := r.Src == nil && r.Dst == nil && r.IifName == "" && r.OifName == ""
	switch {
	case !plain:
		return false
	case r.Priority == 0 && r.Table == unix.RT_TABLE_LOCAL,
		r.Priority == 32766 && r.Table == unix.RT_TABLE_MAIN,
		r.Priority == 32767 && r.Table == unix.RT_TABLE_DEFAULT:
		return true
	}
	return r.Priority == 1000 && r.Table == 0 // l3mdev: its table is the packet's VRF's
}

// ReadNetfilter reads the node's nslab table when the file gives it rules.
func ReadNetfilter(x *ns.NS, l *spec.Lab, ni *NodeInfo) error {
	n := l.Node(ni.Node)
	if n == nil || !n.HasNetfilter() {
		return nil
	}
	chains, rules, found, err := netfilter.Read(x.Fd())
	if err != nil {
		return fmt.Errorf("nftables in %s: %w", ni.Namespace, err)
	}
	info := &NetfilterInfo{Table: "inet " + netfilter.Table, Missing: !found, Chains: chains}
	if n.Flowtable && found {
		if info.Flowtables, err = netfilter.Flowtables(x.Fd()); err != nil {
			return fmt.Errorf("nftables in %s: %w", ni.Namespace, err)
		}
	}
	words := n.RuleWords()
	prefix := netfilter.Comment(l.Name, "")
	for _, r := range rules {
		ri := RuleInfo{Counted: r}
		if path, ok := strings.CutPrefix(r.Comment, prefix); ok {
			ri.Path, ri.Rule = path, words[path]
		}
		info.Rules = append(info.Rules, ri)
	}
	ni.Netfilter = info
	return nil
}

// LinkInfo describes one link of a node.
func LinkInfo(h *netlink.Handle, lk netlink.Link, names map[int]string) (IfInfo, error) {
	a := lk.Attrs()
	ifc := IfInfo{Name: a.Name, Kind: lk.Type(), MAC: a.HardwareAddr.String(), MTU: a.MTU, State: a.OperState.String(), Master: names[a.MasterIndex], Addresses: []string{}}
	if ifc.Kind == "veth" {
		ifc.Peer = fmt.Sprintf("if%d", a.ParentIndex)
	}
	if vx, ok := lk.(*netlink.Vxlan); ok {
		ifc.Peer = fmt.Sprintf("vni%d", vx.VxlanId) // checked against the file's tunnel
	}
	addrs, err := nlsafe.AddrList(h, lk, netlink.FAMILY_ALL)
	if err != nil {
		return ifc, fmt.Errorf("list addresses of %s: %w", a.Name, err)
	}
	for _, ad := range addrs {
		ifc.Addresses = append(ifc.Addresses, ad.IPNet.String())
	}
	st, err := qdisc.Read(h, lk)
	if err != nil {
		return ifc, err
	}
	if st != nil {
		ifc.Impairment = st.String()
		ifc.Qdiscs = []QdiscCounts{{Kind: st.Kind, Parent: "root", Counters: st.Counters}}
		if st.ChildCounters != nil {
			ifc.Qdiscs = append(ifc.Qdiscs, QdiscCounts{Kind: st.Child, Parent: "root's child", Counters: *st.ChildCounters})
		}
	}
	return ifc, nil
}

// ReadNodeSysfs reads, from a thread in the node that sees its sysfs and
// procfs, the forwarding settings and each interface's queues.
func ReadNodeSysfs(x *ns.NS, ni *NodeInfo) error {
	return x.DoSysfs(func() error {
		ni.Forwarding.IPv4 = readSysctl("/proc/sys/net/ipv4/ip_forward") == "1"
		ni.Forwarding.IPv6 = readSysctl("/proc/sys/net/ipv6/conf/all/forwarding") == "1"
		for i := range ni.Interfaces {
			ifc := &ni.Interfaces[i]
			if ifc.Name == "lo" || ifc.Kind == "bridge" {
				continue
			}
			ifc.Queues = ReadQueues(ifc.Name)
			ifc.Offloads = readOffloads(ifc.Name)
			ifc.NAPI, _ = ReadNAPI(ifc.Name) // none for a device without them
		}
		return nil
	})
}

// readOffloads reads interface ifc's offloads, from a thread in its
// namespace (nil when ethtool answers none of them).
func readOffloads(ifc string) map[string]bool {
	out := map[string]bool{}
	for _, k := range spec.OffloadNames {
		if on, err := ethtool.Feature(ifc, k); err == nil {
			out[k] = on
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ReadQueues reads an interface's queues from the calling thread's sysfs.
func ReadQueues(ifc string) *Queues {
	q := &Queues{Rx: QueueCount(ifc, "rx"), Tx: QueueCount(ifc, "tx")}
	for i := 0; i < q.Rx; i++ {
		set, _ := ReadMaskFile(fmt.Sprintf("/sys/class/net/%s/queues/rx-%d/rps_cpus", ifc, i))
		q.RPS = append(q.RPS, set.String())
	}
	for i := 0; i < q.Tx; i++ {
		set, _ := ReadMaskFile(fmt.Sprintf("/sys/class/net/%s/queues/tx-%d/xps_cpus", ifc, i))
		q.XPS = append(q.XPS, set.String())
	}
	q.Threaded = readSysctl("/sys/class/net/"+ifc+"/threaded") == "1"
	q.GRO, _ = ethtool.GRO(ifc)
	q.TSO, _ = ethtool.TSO(ifc)
	return q
}

// readSysctl reads a /proc/sys value in the calling thread's namespace; ""
// when it cannot be read.
func readSysctl(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// TunnelPeer names the far end of the VXLAN interface ep when the
// kernel's VNI (as "vniN") is the file's for it, else "".
func TunnelPeer(l *spec.Lab, ep spec.Endpoint, kernel string) string {
	for _, t := range l.Tunnels() {
		if t.Local == ep && kernel == fmt.Sprintf("vni%d", t.VNI) {
			return fmt.Sprintf("%s on host %s (VNI %d)", t.Remote, t.RemoteHost, t.VNI)
		}
	}
	return ""
}

// PeerIndex is the ifindex a veth reports for its peer (IFLA_LINK).
func PeerIndex(ifc *IfInfo) int {
	idx, err := strconv.Atoi(strings.TrimPrefix(ifc.Peer, "if"))
	if err != nil {
		return -1
	}
	return idx
}

// routeInfos is a kernel route as inspect shows it: one row per next hop
// (an ECMP route's each with its gateway and device), gateways of the
// other family (RTA_VIA) as well, FRR's protocol numbers by name.
func routeInfos(r netlink.Route, names map[int]string) []RouteInfo {
	ri := RouteInfo{Dev: names[r.LinkIndex], Metric: r.Priority, Proto: protoName(r.Protocol), Table: r.Table}
	switch {
	case r.Dst == nil || isDefault(r.Dst):
		ri.To = "default"
	default:
		ri.To = r.Dst.String()
	}
	if gw := Gateway(r.Gw, r.Via); gw.IsValid() {
		ri.Via = gw.String()
	}
	if len(r.MultiPath) == 0 {
		return []RouteInfo{ri}
	}
	var out []RouteInfo
	for _, hop := range r.MultiPath {
		x := ri
		x.Dev, x.Via = names[hop.LinkIndex], ""
		if gw := Gateway(hop.Gw, hop.Via); gw.IsValid() {
			x.Via = gw.String()
		}
		out = append(out, x)
	}
	return out
}

// frrProtocols names the route protocol numbers FRR's zebra installs with
// (zebra/rt_netlink.h) that iproute2's table has no name for.
var frrProtocols = map[netlink.RouteProtocol]string{186: "bgp", 187: "isis", 188: "ospf", 189: "rip", 190: "ripng", 191: "nhrp", 192: "eigrp", 193: "ldp", 194: "sharp", 195: "pbr", 196: "static", 197: "openfabric", 198: "srte"}

func protoName(p netlink.RouteProtocol) string {
	if n, ok := frrProtocols[p]; ok {
		return n
	}
	return p.String()
}

func isDefault(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0
}

// ReadMaskFile reads an rps_cpus or xps_cpus file as a CPU set.
func ReadMaskFile(path string) (spec.CPUSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return spec.ParseCPUMask(strings.TrimSpace(string(b)))
}

// QueueCount counts an interface's rx- or tx- queues in sysfs.
func QueueCount(ifc, kind string) int {
	qs, _ := filepath.Glob(filepath.Join("/sys/class/net", ifc, "queues", kind+"-*"))
	return len(qs)
}

// Gateway is a kernel route's next hop: its gateway of the route's own
// family (RTA_GATEWAY), or of the other (RTA_VIA: an IPv4 route through
// an IPv6 link-local next hop, as BGP unnumbered installs them); invalid
// for none.
func Gateway(gw net.IP, via netlink.Destination) netip.Addr {
	if v, ok := via.(*netlink.Via); ok && v.Addr != nil {
		gw = v.Addr
	}
	a, _ := netip.AddrFromSlice(gw)
	return a.Unmap()
}
